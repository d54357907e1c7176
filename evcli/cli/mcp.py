"""`evcli mcp`: serve the evidence tools, check_claims, get_session and diagnose to MCP clients.

stdio by default (the client starts `evcli mcp` itself); `--http` serves streamable HTTP at
http://HOST:PORT/mcp, loopback unless told, and any other address only with a bearer token. The MCP SDK
is imported here, inside the command, so no other command pays for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from evcli.cli._common import DbOption, environment_options, err, handles_errors
from evcli.cli.ask import ApiBaseOption, MaxStepsOption, ModelOption, RulesOption, _models, _pipeline
from evcli.core.errors import BadInput, EvcliError

if TYPE_CHECKING:
    from evcli.backends.spec import EnvironmentSpec
    from evcli.config import Loaded


@handles_errors
@environment_options(runbooks=True)
def mcp_command(
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.")
    ] = False,
    host: Annotated[
        str, typer.Option("--host", help="Address --http binds; one other than loopback needs --token-env.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port --http listens on.")] = 8765,
    token_env: Annotated[
        str | None,
        typer.Option("--token-env", help="With --http: require the bearer token held in this environment variable."),
    ] = None,
    *,
    environment: EnvironmentSpec,
    model: ModelOption = None,
    api_base: ApiBaseOption = None,
    rules: RulesOption = None,
    max_steps: MaxStepsOption = 8,
    db: DbOption = None,
    settings: Loaded = None,  # type: ignore[assignment]  # filled by the environment options
) -> None:
    """Serve evcli to MCP clients: every evidence tool (each call recorded in a session), check_claims,
    get_session and diagnose.

    Examples: `evcli mcp` (stdio; a client such as Claude Desktop starts it) ·
    `evcli mcp --env edge --http --port 8765` (http://127.0.0.1:8765/mcp)
    """
    from evcli.cli._common import bearer_token, loopback
    from evcli.cli._progress import _silent

    if not http and (token_env is not None or host != "127.0.0.1"):
        raise BadInput("--host and --token-env go with --http", hint="add --http, or drop them for stdio")
    if http and not loopback(host) and token_env is None:
        raise BadInput(f"--host {host} is reachable from other hosts: give --token-env NAME with a bearer token")
    token = bearer_token(token_env) if token_env else None
    server = _sdk_server()
    models = _models(settings, model, None, None, None, None, api_base)
    models.check()
    from evcli.mcp.service import McpService

    pipeline = _pipeline(db, rules, models, environment.as_config(), max_steps, progress=_silent)
    service = McpService(pipeline)
    if not http:
        server.serve_stdio(service)
        return
    err.print(
        f"evcli mcp serving http://{host}:{port}{server.MCP_PATH} "
        f"({'loopback only' if loopback(host) else 'reachable from other hosts'}); "
        f"store {pipeline.store.path}; token {'required' if token else 'not required'}",
        highlight=False,
    )
    server.serve_http(service, host, port, token)


def _sdk_server():
    """evcli.mcp.server, which imports the MCP SDK; a one-line error when it is not installed."""
    try:
        from evcli.mcp import server
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] != "mcp":
            raise
        raise EvcliError("evcli mcp needs the MCP SDK", hint="pip install 'evcli[mcp]'") from exc
    return server
