"""The stage graph table: the order every reader takes from it, and what the contracts say about it."""

from __future__ import annotations

import typing

from evcli.contracts import StoredStage
from evcli.pipeline import Pipeline
from evcli.stages import REPLAYABLE, STAGE_NAMES, STAGES, stages_from, upstream


def test_the_table_is_the_diagnosis_order():
    assert STAGE_NAMES == ("plan", "execute", "gate", "verify", "compose")
    assert REPLAYABLE == ("execute", "gate", "verify", "compose")
    assert [stage.name for stage in stages_from("gate")] == ["gate", "verify", "compose"]


def test_every_stage_reads_only_earlier_stages_and_runs_a_pipeline_method():
    for index, stage in enumerate(STAGES):
        assert set(stage.reads) <= set(STAGE_NAMES[:index]), stage
        assert callable(getattr(Pipeline, stage.run)), stage
        assert callable(getattr(Pipeline, stage.name)), stage  # the stage run once (a replay that reuses its reruns)
        assert set(stage.reruns) <= {s.name for s in upstream(stage.name)}, stage


def test_upstream_is_everything_a_stage_depends_on():
    assert [s.name for s in upstream("execute")] == ["plan"]
    assert [s.name for s in upstream("verify")] == ["plan", "execute", "gate"]
    assert [s.name for s in upstream("compose")] == ["plan", "execute", "gate", "verify"]


def test_stored_stage_names_are_the_stages_that_write_stage_outputs():
    assert set(typing.get_args(StoredStage)) == {s.name for s in STAGES if "stage_outputs" in s.writes}


def test_replay_from_an_unknown_stage_names_the_choices(db_path):
    from tests.cli._util import assert_clean_error, evcli
    from tests.conftest import sample

    run = evcli("replay", sample("narrow-payment-highcpu"), "--from", "plan", "--db", db_path)
    assert_clean_error(run, 2, "--from must be one of execute, gate, verify, compose")
    assert "execute, gate, verify or compose" in evcli("replay", "--help").stdout
