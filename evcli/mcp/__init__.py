"""`evcli mcp`: evcli's evidence tools, the Gatekeeper, stored sessions and the whole chain as an MCP server.

`service` is the library (what each tool does; no MCP SDK), `server` puts it on the official `mcp` SDK
over stdio or streamable HTTP. Only `server` imports the SDK, and only `evcli mcp` imports `server`.
"""
