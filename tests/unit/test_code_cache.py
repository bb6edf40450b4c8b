"""Dataclasses' methods compiled once and read back: the same classes, and nothing trusted
or written that should not be (cli/code_cache.py)."""

from __future__ import annotations

import dataclasses
import marshal
import mmap
import os
import subprocess
import sys
import weakref
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


METHODS = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")


def names_in(code: CodeType) -> set[str]:
    """The attribute and global names ``code`` and the code within it use."""
    inner = [const for const in code.co_consts if isinstance(const, CodeType)]
    return set(code.co_names).union(*(names_in(each) for each in inner))


def first_start(path: Path) -> int:
    """Make the class in a window of its own with nothing cached; how many texts it compiled
    (one a method up to Python 3.12, one a class from 3.13)."""
    code_cache.begin(path)
    make_point()
    counts = code_cache.counts()
    code_cache.end()
    assert counts is not None and counts[0] == 0 and counts[1] >= 1
    return counts[1]


def file_of(
    index: bytes, block: bytes, layout: bytes = code_cache.FORMAT, check: bytes | None = None
) -> bytes:
    """A file's bytes holding the marshalled ``index`` and the ``block``, whatever they are,
    under ``layout``; its digest right unless ``check`` is given."""
    checked = len(index).to_bytes(8, "little") + index + block
    return layout + (check or code_cache.digest(checked)) + checked


def write_raw(path: Path, index: Any, block: bytes) -> None:
    """A file whose check passes, holding ``index`` (marshalled) and ``block``."""
    path.write_bytes(file_of(marshal.dumps(index), block))
    path.chmod(0o644)


def test_a_second_start_reads_what_the_first_compiled(tmp_path: Path) -> None:
    path = tmp_path / "cache.marshal"
    plain = make_point()
    code_cache.begin(path)
    first = make_point()
    compiled = code_cache.counts()
    assert compiled is not None and compiled[0] == 0 and compiled[1] >= 1
    code_cache.end()
    assert path.exists()
    code_cache.begin(path)
    second = make_point()
    assert code_cache.counts() == (compiled[1], 0)
    code_cache.end()
    for cls in (first, second):
        # The very code exec compiles from the text: bytecode, flags, positions, names, and
        # the annotations as dataclasses gave them (no `from __future__ import annotations`
        # inherited from code_cache.py).
        for name in METHODS:
            assert getattr(cls, name).__code__ == getattr(plain, name).__code__, name
        assert cls.__init__.__annotations__ == plain.__init__.__annotations__
        point = cls(1, 2.0)
        assert repr(point) == repr(plain(1, 2.0))
        assert repr(point).endswith("make_point.<locals>.Point(x=1, y=2.0, tags=[])")
        assert point == cls(1, 2.0) and hash(point) == hash(cls(1, 2.0))
        assert point.tags == [] and point.tags is not cls(1).tags
        with pytest.raises(dataclasses.FrozenInstanceError):
            point.x = 3


def test_a_start_reads_the_file_into_a_mapping_let_go_at_its_end(tmp_path: Path) -> None:
    """Read into memory, a block the size of the file (and its copies) would leave the C
    library keeping blocks that size in its heap once freed: 0.3-0.5 MiB of RSS for the
    life of the process (benchmarks/README.md)."""
    path = tmp_path / "cache.marshal"
    first_start(path)
    index, block = code_cache.read(path)
    assert index and isinstance(block, memoryview) and isinstance(block.obj, mmap.mmap)
    del index, block

    code_cache.begin(path)
    window = code_cache._window
    assert window is not None and isinstance(window.block, memoryview)
    mapping = weakref.ref(window.block.obj)
    del window
    make_point()
    assert code_cache.counts() is not None
    code_cache.end()
    assert mapping() is None


def test_a_file_cut_in_place_during_a_start_is_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "cache.marshal"
    texts = first_start(path)
    code_cache.begin(path)
    with open(path, "r+b") as file:
        file.truncate(0)
    make_point()
    assert code_cache.counts() == (texts, 0)
    code_cache.end()


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_a_fifo_or_a_link_at_the_path_is_not_read(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "cache.marshal"
    texts = first_start(tmp_path / "clean.marshal")
    if kind == "fifo":
        os.mkfifo(path, 0o644)
    else:
        path.symlink_to(tmp_path / "clean.marshal")
    assert code_cache.read(path) == ({}, b"")
    code_cache.begin(path)
    make_point()
    assert code_cache.counts() == (0, texts)
    code_cache.end()


def test_a_start_that_compiled_nothing_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cache.marshal"
    first_start(path)
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
        b"not a cache at all \x00\xff" * 20,
        file_of(marshal.dumps({}), b"", code_cache.FORMAT[:-5] + b"\x00\x00\r\n\x00"),
        file_of(marshal.dumps({}), b"", code_cache.FORMAT[:-1] + b"\x07"),
        code_cache.FORMAT + bytes(10),
        file_of(marshal.dumps({}), b"x" * 100, check=b"not its check..."),
        file_of(marshal.dumps({}), b"x" * 100)[:-1],
        marshal.dumps((code_cache.FORMAT, b"the first layout", marshal.dumps(({}, b"")))),
    ],
    ids=[
        "empty",
        "garbage",
        "another-python",
        "another-optimisation",
        "short",
        "check-fails",
        "cut-short",
        "first-layout",
    ],
)
def test_a_damaged_or_foreign_file_is_compiled_past(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "cache.marshal"
    texts = first_start(tmp_path / "clean.marshal")
    path.write_bytes(content)
    path.chmod(0o644)
    code_cache.begin(path)
    cls = make_point()
    assert code_cache.counts() == (0, texts)
    code_cache.end()
    assert cls(1).x == 1
    assert len(code_cache.read(path)[0]) == texts  # written afresh, readable


def test_every_flipped_bit_of_a_file_is_caught_by_its_check(tmp_path: Path) -> None:
    """Bits flipped in the code of a method made marshal raise SystemError, or made code
    that crashed when run: the file's check keeps any of it from being read."""
    path = tmp_path / "cache.marshal"
    first_start(path)
    clean = path.read_bytes()
    for bit in range(0, len(clean) * 8, 97):
        damaged = bytearray(clean)
        damaged[bit // 8] ^= 1 << (bit % 8)
        path.write_bytes(bytes(damaged))
        assert code_cache.read(path) == ({}, b""), bit


@pytest.mark.parametrize(
    ("index", "block"),
    [
        ("not a dict", b""),
        ("not marshal", b""),
        ("bounds past the block", b""),
        ("no bounds", b""),
    ],
)
def test_a_whole_file_of_the_wrong_things_is_compiled_past(
    tmp_path: Path, index: object, block: bytes
) -> None:
    texts = first_start(tmp_path / "clean.marshal")
    keys = list(code_cache.read(tmp_path / "clean.marshal")[0])
    if index == "bounds past the block":
        index, block = {key: (5, 10**6) for key in keys}, b"x"
    elif index == "no bounds":
        places: list[object] = [(), 7, (1, 2, 3), ("a", "b")]
        index, block = {key: places[n % 4] for n, key in enumerate(keys)}, b"x"
    path = tmp_path / "cache.marshal"
    if index == "not marshal":
        path.write_bytes(file_of(b"\xff\x00 not marshal", block))
        path.chmod(0o644)
    else:
        write_raw(path, index, block)
    code_cache.begin(path)
    assert make_point()(1).x == 1
    assert code_cache.counts() == (0, texts)
    code_cache.end()
    assert len(code_cache.read(path)[0]) == texts  # written again, the wrong entries gone


def test_what_no_text_could_be_keyed_by_is_not_written_forward(tmp_path: Path) -> None:
    texts = first_start(tmp_path / "clean.marshal")
    index, block = code_cache.read(tmp_path / "clean.marshal")
    start, end = next(iter(index.values()))
    junk: dict[Any, Any] = {"a text": (start, end), 7: (start, end), None: (start, end)}
    junk[b"\x01" * 16] = (start, len(block) + 1)  # past the block
    path = tmp_path / "cache.marshal"
    write_raw(path, {**index, **junk}, bytes(block))
    del index, block
    code_cache.begin(path)
    make_point()

    @dataclasses.dataclass
    class Other:  # compiled anew: the file is written again
        name: str

    assert code_cache.counts() == (texts, 1 if sys.version_info >= (3, 13) else 3)
    code_cache.end()
    kept, _ = code_cache.read(path)
    assert all(isinstance(key, bytes) and len(key) == 16 for key in kept)
    assert len(kept) == texts + (1 if sys.version_info >= (3, 13) else 3)


def test_an_entry_that_is_not_code_is_compiled_past(tmp_path: Path) -> None:
    path = tmp_path / "cache.marshal"
    texts = first_start(path)
    index, _ = code_cache.read(path)
    not_code = marshal.dumps("print('not code')")
    code_cache.write(path, {key: not_code for key in index})
    code_cache.begin(path)
    assert make_point()(1).x == 1
    assert code_cache.counts() == (0, texts)


def test_a_file_others_may_write_or_own_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "cache.marshal"
    first_start(path)
    assert code_cache.read(path)[0]
    for mode in (0o664, 0o646, 0o666):
        path.chmod(mode)
        assert code_cache.read(path) == ({}, b""), oct(mode)
    path.chmod(0o644)
    assert code_cache.read(path)[0]
    if os.geteuid() == 0:
        os.chown(path, 12345, -1)  # another user's
        assert code_cache.read(path) == ({}, b"")
        os.chown(path, 0, -1)  # root's: trusted as root's bytecode is
        assert code_cache.read(path)[0]


def test_the_file_is_its_owners_alone_whatever_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "cache.marshal"
    old = os.umask(0o002)  # user-private groups: files made group-writable
    try:
        first_start(path)
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644
    assert code_cache.read(path)[0]


def test_it_is_never_written_through_a_link(tmp_path: Path) -> None:
    path = tmp_path / "cache.marshal"
    target = tmp_path / "someone-elses-file"
    target.write_text("kept")
    (tmp_path / f"{path.name}.{os.getpid()}.tmp").symlink_to(target)
    code_cache.begin(path)
    make_point()
    code_cache.end()
    assert target.read_text() == "kept"
    assert not path.exists()


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
def test_the_stock_switch_turns_it_off_and_leaves_the_file_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stock: str
) -> None:
    path = tmp_path / "cache.marshal"
    path.write_bytes(b"damaged")
    path.chmod(0o644)
    monkeypatch.setenv("GPUTOP_STOCK_TEXTUAL", stock)
    code_cache.begin(path)
    assert "exec" not in vars(dataclasses)
    assert code_cache.counts() is None
    make_point()
    code_cache.end()
    assert path.read_bytes() == b"damaged"


def test_other_patches_named_leave_it_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUTOP_STOCK_TEXTUAL", "table_caches")
    code_cache.begin(tmp_path / "cache.marshal")
    assert vars(dataclasses)["exec"] is not None
    make_point()
    counts = code_cache.counts()
    assert counts is not None and counts[1] >= 1


def test_past_the_bound_a_start_keeps_only_what_it_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cache.marshal"
    texts = first_start(tmp_path / "clean.marshal")
    code = marshal.dumps(compile("pass", "<string>", "exec"))
    old = {code_cache.digest(f"# an old release's class {n}\n"): code for n in range(8)}
    code_cache.write(path, old)
    monkeypatch.setattr(code_cache, "MAX_ENTRIES", texts + 4)
    code_cache.begin(path)
    make_point()
    code_cache.end()
    kept, _ = code_cache.read(path)
    assert len(kept) == texts and not set(kept) & set(old)
    monkeypatch.setattr(code_cache, "MAX_ENTRIES", 100)
    code_cache.write(path, old)
    code_cache.begin(path)
    make_point()
    code_cache.end()
    assert len(code_cache.read(path)[0]) == texts + 8


def test_an_optimised_python_keeps_a_file_of_its_own() -> None:
    where = "from gputop.cli.code_cache import cache_path; print(cache_path())"
    env = {**os.environ, "PYTHONPATH": str(REPO / "tui")}
    names = [
        subprocess.run(
            [sys.executable, *flags, "-c", where],
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.strip()
        for flags in ([], ["-O"], ["-OO"])
    ]
    assert names[0].endswith(f"dataclass-code.{sys.implementation.cache_tag}.marshal")
    assert names[1].endswith(".opt-1.marshal") and names[2].endswith(".opt-2.marshal")


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
