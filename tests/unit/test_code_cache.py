"""Dataclasses' methods compiled once and read back: the same classes, and nothing trusted
or written that should not be (cli/code_cache.py)."""

from __future__ import annotations

import dataclasses
import marshal
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import CodeType
from typing import Any

import pytest

from gputop.cli import code_cache

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_window(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test opens its own window, with the patches on and bytecode written."""
    monkeypatch.delenv("GPUTOP_STOCK_TEXTUAL", raising=False)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    code_cache.end()
    yield
    code_cache.end()
    assert "exec" not in vars(dataclasses)


def make_point() -> type[Any]:
    """A frozen, slotted dataclass with a default and a factory, made now."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class Point:
        """A point."""

        x: int
        y: float | None = None
        tags: list[str] = dataclasses.field(default_factory=list, hash=False)

    return Point


def methods(cls: type[Any]) -> dict[str, bytes]:
    """The bytecode of the methods dataclasses gave ``cls``."""
    names = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")
    return {name: getattr(cls, name).__code__.co_code for name in names}


def names_in(code: CodeType) -> set[str]:
    """The attribute and global names ``code`` and the code within it use."""
    inner = [const for const in code.co_consts if isinstance(const, CodeType)]
    return set(code.co_names).union(*(names_in(each) for each in inner))


def test_a_second_start_reads_what_the_first_compiled(tmp_path: Path) -> None:
    path = tmp_path / "cache.marshal"
    plain = make_point()
    code_cache.begin(path)
    first = make_point()
    assert code_cache.counts() == (0, 6)
    code_cache.end()
    assert path.exists()
    code_cache.begin(path)
    second = make_point()
    assert code_cache.counts() == (6, 0)
    code_cache.end()
    for cls in (first, second):
        # The very code exec compiles from the text, annotations kept as objects (no
        # `from __future__ import annotations` inherited from code_cache.py).
        assert methods(cls) == methods(plain)
        assert cls.__init__.__annotations__ == plain.__init__.__annotations__
        assert cls.__init__.__code__.co_flags == plain.__init__.__code__.co_flags
        point = cls(1, 2.0)
        assert repr(point) == repr(plain(1, 2.0))
        assert repr(point).endswith("make_point.<locals>.Point(x=1, y=2.0, tags=[])")
        assert point == cls(1, 2.0) and hash(point) == hash(cls(1, 2.0))
        assert point.tags == [] and point.tags is not cls(1).tags
        with pytest.raises(dataclasses.FrozenInstanceError):
            point.x = 3


def test_a_start_that_compiled_nothing_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cache.marshal"
    code_cache.begin(path)
    make_point()
    code_cache.end()
    before = path.stat().st_mtime_ns
    os.utime(path, ns=(before - 10**9, before - 10**9))
    code_cache.begin(path)
    make_point()
    code_cache.end()
    assert path.stat().st_mtime_ns == before - 10**9


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not marshal at all \x00\xff",
        marshal.dumps(((b"\x00\x00\r\n", 0), {}, b"")),
        marshal.dumps(["a list"]),
        marshal.dumps((code_cache._FORMAT, ["not", "a", "dict"], b"")),
        marshal.dumps((code_cache._FORMAT, {}, "not bytes")),
    ],
    ids=["empty", "garbage", "another-python", "not-a-tuple", "not-a-dict", "not-bytes"],
)
def test_a_damaged_or_foreign_file_is_compiled_past(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "cache.marshal"
    path.write_bytes(content)
    code_cache.begin(path)
    cls = make_point()
    assert code_cache.counts() == (0, 6)
    code_cache.end()
    assert cls(1).x == 1
    assert code_cache.read(path)[0]  # written afresh, readable


def test_an_entry_that_is_not_code_is_compiled_past(tmp_path: Path) -> None:
    path = tmp_path / "cache.marshal"
    code_cache.begin(path)
    make_point()
    code_cache.end()
    index, _ = code_cache.read(path)
    not_code = marshal.dumps("print('not code')")
    poisoned = {key: not_code for key in index}
    code_cache.write(path, poisoned)
    code_cache.begin(path)
    assert make_point()(1).x == 1
    assert code_cache.counts() == (0, 6)
    code_cache.end()
    # Bounds outside the block or cut through a piece, or no bounds at all.
    for places in ([(5, 10**6)], [(), 7, (1, 2, 3), ("a", "b")]):
        bad = {key: places[n % len(places)] for n, key in enumerate(index)}
        path.write_bytes(marshal.dumps((code_cache._FORMAT, bad, b"x")))
        code_cache.begin(path)
        assert make_point()(1).x == 1
        assert code_cache.counts() == (0, 6)
        code_cache.end()
        assert len(code_cache.read(path)[0]) == 6  # written again, the bad places gone


def test_a_file_others_may_write_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "cache.marshal"
    code_cache.begin(path)
    make_point()
    code_cache.end()
    assert code_cache.read(path)[0]
    path.chmod(0o664)
    assert code_cache.read(path) == ({}, b"")
    path.chmod(0o646)
    assert code_cache.read(path) == ({}, b"")
    path.chmod(0o644)
    assert code_cache.read(path)[0]


def test_nothing_is_written_where_bytecode_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cache.marshal"
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    code_cache.begin(path)
    make_point()
    code_cache.end()
    assert not path.exists()
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    blocked = tmp_path / "a-file" / "cache.marshal"
    blocked.parent.write_text("a file where the folder would be")
    code_cache.begin(blocked)
    make_point()
    code_cache.end()  # nothing raised, nothing left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


@pytest.mark.parametrize("stock", ["1", "dataclass_code", "table_caches,dataclass_code"])
def test_the_stock_switch_turns_it_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stock: str
) -> None:
    monkeypatch.setenv("GPUTOP_STOCK_TEXTUAL", stock)
    code_cache.begin(tmp_path / "cache.marshal")
    assert "exec" not in vars(dataclasses)
    assert code_cache.counts() is None
    make_point()
    code_cache.end()
    assert not (tmp_path / "cache.marshal").exists()


def test_other_patches_named_leave_it_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUTOP_STOCK_TEXTUAL", "table_caches")
    code_cache.begin(tmp_path / "cache.marshal")
    assert vars(dataclasses)["exec"] is not None
    make_point()
    assert code_cache.counts() == (0, 6)


def test_past_the_bound_a_start_keeps_only_what_it_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cache.marshal"
    code = marshal.dumps(compile("pass", "<string>", "exec"))
    old = {code_cache.digest(f"# an old release's class {n}\n"): code for n in range(8)}
    code_cache.write(path, old)
    monkeypatch.setattr(code_cache, "MAX_ENTRIES", 10)
    code_cache.begin(path)
    make_point()
    code_cache.end()
    kept, _ = code_cache.read(path)
    assert len(kept) == 6 and not set(kept) & set(old)
    monkeypatch.setattr(code_cache, "MAX_ENTRIES", 100)
    code_cache.write(path, old)
    code_cache.begin(path)
    make_point()
    code_cache.end()
    assert len(code_cache.read(path)[0]) == 14


def test_the_command_begins_it_before_the_command_line_is_imported(tmp_path: Path) -> None:
    """`python -m gputop` (as the console script, cli/entry.py) caches the options' own class,
    made as cli.main is imported, and a second start compiles nothing."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUTOP_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(PYTHONPYCACHEPREFIX=str(tmp_path), PYTHONPATH=str(REPO / "tui"))
    command = [sys.executable, "-m", "gputop", "--demo", "--once"]
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=60)
    files = list(tmp_path.rglob("dataclass-code.*.marshal"))
    assert len(files) == 1
    index, block = code_cache.read(files[0])
    # cli.options.Options's methods: their names, as dataclasses writes them, in the code.
    codes = [marshal.loads(block[start:end]) for start, end in index.values()]
    assert any({"replay", "once", "json", "interval"} <= names_in(code) for code in codes)
    written = files[0].stat().st_mtime_ns
    os.utime(files[0], ns=(written - 10**9, written - 10**9))
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=60)
    assert files[0].stat().st_mtime_ns == written - 10**9
