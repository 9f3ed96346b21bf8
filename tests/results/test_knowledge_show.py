"""Issue 49, item 1: ``fedstruct show`` says in one line when a run folder's
knowledge.json names variables its graph lacks or contradicts itself (it used to
show such a file's summary without a word)."""

import json

from typer.testing import CliRunner

from fedstruct.cli import app

runner = CliRunner()


def test_show_warns_about_a_knowledge_file_that_does_not_fit_the_graph(tmp_path):
    given = tmp_path / "k.json"
    given.write_text(json.dumps({"tiers": [["asia"], ["dysp"]]}))
    out = tmp_path / "run"
    run = ["run", "fedcdnv", "--network", "asia", "--clients", "2", "--quiet"]
    result = runner.invoke(app, [*run, "--knowledge", str(given), "--out", str(out)])
    assert result.exit_code == 0, result.output
    picture = ["--picture", str(tmp_path / "g.png"), "--overwrite"]
    shown = runner.invoke(app, ["show", str(out), *picture])
    assert shown.exit_code == 0 and "warning" not in shown.output  # the run's own file fits

    saved = out / "knowledge.json"
    saved.write_text(
        json.dumps(
            {"tiers": [["asia"], ["dysp"]], "required": [["dysp", "asia"], ["smokng", "lung"]]}
        )
    )
    shown = runner.invoke(app, ["show", str(out), *picture])
    assert shown.exit_code == 0, shown.output
    [line] = [w for w in shown.output.splitlines() if w.startswith("warning:")]
    assert line == (
        f"warning: {saved} does not fit the graph shown: it names smokng, not variables of "
        "this graph; it contradicts itself (required edge dysp -> asia goes from tier 2 into "
        "the earlier tier 1)"
    )
