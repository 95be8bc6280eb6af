"""Case sources: bundled, case packs, user and project folders, explicit paths; the most local wins.

A test sees only the case packs it installs itself (under its tmp_path): whatever else the venv
holds stays out, and the tests that a foreign pack would disturb also run beside one.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from runner.cli import main
from runner.errors import UserError, UserErrors
from runner.spec.discover import (
    load_sourced,
    package_sources,
    select_sources,
    user_cases_dir,
)

CASE = "- id: {id}\n  description: {text}\n  turns: [Hi.]\n  script: [{{content: hi}}]\n"


def write_group(folder: Path, group: str, **cases: str) -> Path:
    """``folder/group.yml`` holding one case per ``id=description``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{group}.yml"
    path.write_text("".join(CASE.format(id=key, text=text) for key, text in cases.items()), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def own_packs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Entry points as installed, less those of any distribution outside this test's tmp_path."""
    installed = metadata.entry_points

    def entry_points(**selection: Any) -> list[metadata.EntryPoint]:
        def own(point: metadata.EntryPoint) -> bool:
            return point.dist is not None and Path(str(point.dist.locate_file(""))).resolve().is_relative_to(ours)

        return [point for point in installed(**selection) if own(point)]

    ours = tmp_path.resolve()

    monkeypatch.setattr(metadata, "entry_points", entry_points)


@pytest.fixture(scope="session")
def foreign_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site folder with a foreign case pack, ``zeta-cases``, with its own ``fs/read-file-lines`` and ``fs/mine``."""
    site = tmp_path_factory.mktemp("foreign-site")
    suite = "from pathlib import Path\n\ndef suite():\n    return Path(__file__).parent / 'cases'\n"
    make_pack(site, "zeta_cases", suite, distribution="zeta-cases", point="zeta")
    write_group(site / "zeta_cases/cases", "fs", **{"read-file-lines": "foreign copy", "mine": "foreign copy"})
    return site


@pytest.fixture(params=["alone", "beside-a-foreign-pack"])
def foreign(request: pytest.FixtureRequest, foreign_site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the test alone, then beside the foreign pack, installed on sys.path where importlib.metadata finds it."""
    if request.param != "alone":
        monkeypatch.syspath_prepend(str(foreign_site))
        assert "zeta" in {point.name for point in metadata.distribution("zeta-cases").entry_points}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake home with a user case folder, a project folder as the cwd, and no XDG_CONFIG_HOME."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    write_group(tmp_path / "home/.config/tooltrial/cases", "fs", **{"read-file-lines": "user copy", "mine": "user only"})
    project = tmp_path / "project"
    write_group(project / ".tooltrial/cases", "fs", mine="project copy")
    monkeypatch.chdir(project)
    return tmp_path


def test_user_folder_follows_xdg_config_home_then_home(tmp_path: Path) -> None:
    assert user_cases_dir({"HOME": "/h"}) == Path("/h/.config/tooltrial/cases")
    assert user_cases_dir({"HOME": "/h", "XDG_CONFIG_HOME": ""}) == Path("/h/.config/tooltrial/cases")
    assert user_cases_dir({"HOME": "/h", "XDG_CONFIG_HOME": "/x"}) == Path("/x/tooltrial/cases")


def test_the_most_local_source_wins_by_full_id(home: Path, foreign: None) -> None:
    sourced = {s.case.full_id: s for s in load_sourced(select_sources())}
    assert sourced["fs/read-file-lines"].case.description == "user copy"
    assert [o.kind for o in sourced["fs/read-file-lines"].overrides] == ["bundled"]
    assert sourced["fs/mine"].case.description == "project copy"
    assert [s.kind for s in (*sourced["fs/mine"].overrides, sourced["fs/mine"].source)] == ["user", "project"]
    assert sourced["fs/grep-symbol"].source.kind == "bundled"
    ids = list(sourced)
    assert ids.index("fs/read-file-lines") < ids.index("fs/grep-symbol") < ids.index("fs/mine")  # first place kept


def test_list_sources_shows_origin_and_overrides(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--sources", "-c", "fs/*"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "fs/read-file-lines  user     ~/.config/tooltrial/cases/fs.yml:1  (overrides bundled)" in lines
    assert "fs/mine             project  .tooltrial/cases/fs.yml:1  (overrides user)" in lines
    assert any(line.startswith("fs/grep-symbol      bundled  ") for line in lines)


def test_explicit_paths_and_no_user_cases_keep_the_user_folder_out(home: Path, foreign: None,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    mine = write_group(home / "elsewhere", "fs", solo="explicit")
    assert main(["list", str(mine)]) == 0
    assert capsys.readouterr().out.split() == ["fs/solo", "explicit"]
    assert main(["list", "--cases-dir", str(mine.parent)]) == 0
    assert capsys.readouterr().out.split() == ["fs/solo", "explicit"]
    assert [s.kind for s in select_sources(user=False)] == ["bundled", "project"]
    assert main(["list", "--no-user-cases", "--sources", "-c", "fs/read-file-lines"]) == 0
    assert " bundled " in capsys.readouterr().out


def test_two_files_of_one_source_with_one_id_are_still_an_error(tmp_path: Path) -> None:
    write_group(tmp_path / "a", "fs", same="one")
    write_group(tmp_path / "b", "fs", same="two")
    with pytest.raises(UserErrors, match="duplicate case 'fs/same'"):
        load_sourced(select_sources([tmp_path / "a", tmp_path / "b"]))


def make_pack(root: Path, module: str, body: str, distribution: str = "acme-cases", point: str = "acme") -> None:
    """An installed ``distribution`` in ``root``: its entry point ``point`` is ``module:suite``."""
    (root / module).mkdir(parents=True)
    (root / module / "__init__.py").write_text(body, encoding="utf-8")
    info = root / f"{distribution.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[tooltrial.suites]\n{point} = {module}:suite\n", encoding="utf-8")


def test_an_installed_case_pack_is_a_source(tmp_path: Path, home: Path, foreign: None,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    pack = tmp_path / "site"
    make_pack(pack, "acme_cases", "from pathlib import Path\n\ndef suite():\n    return Path(__file__).parent / 'cases'\n")
    write_group(pack / "acme_cases/cases", "acme", hello="from the pack")
    write_group(pack / "acme_cases/cases", "fs", mine="pack copy")
    monkeypatch.syspath_prepend(str(pack))
    (source,) = package_sources()
    assert (source.kind, source.label) == ("package", "package acme-cases")
    sourced = {s.case.full_id: s for s in load_sourced(select_sources())}
    assert sourced["acme/hello"].source.label == "package acme-cases"
    assert [o.kind for o in sourced["fs/mine"].overrides] == ["package", "user"]
    assert [s.kind for s in select_sources(["cases"])] == ["path"]


def test_a_broken_case_pack_is_named(tmp_path: Path, foreign: None, monkeypatch: pytest.MonkeyPatch) -> None:
    make_pack(tmp_path, "broken_cases", "def suite():\n    return '/nowhere/at/all'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UserError) as raised:
        package_sources()
    assert raised.value.render() == (
        "case pack 'acme' (broken_cases:suite) did not return a folder: '/nowhere/at/all' "
        "(return the path of a folder of case files)"
    )
