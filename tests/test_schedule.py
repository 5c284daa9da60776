"""Files are handed to the workers biggest first (issue 28): a big file last in path order must not
start last and keep one worker busy after the others ran out of work."""

from __future__ import annotations

from devlint import schedule


def test_the_biggest_file_goes_first_whatever_its_place():
    paths = [f"f{i}.py" for i in range(40)]
    data = [b"x" * 10 for _ in paths]
    data[-1] = b"x" * 1000  # last in path order, biggest
    grouped = schedule.chunks(paths, data, jobs=2)
    assert grouped[0] == [39]
    assert sorted(i for chunk in grouped for i in chunk) == list(range(40))  # each file once


def test_small_files_share_chunks_up_to_an_even_share():
    paths = [f"f{i}.py" for i in range(160)]
    data = [b"x" * 100 for _ in paths]
    grouped = schedule.chunks(paths, data, jobs=2)
    # 16,000 bytes in 2 workers x 8 chunks: 1,000 bytes, so 10 files, a chunk
    assert [len(chunk) for chunk in grouped] == [10] * 16


def test_sizes_on_disk_when_the_parent_did_not_read(tmp_path):
    small, big = tmp_path / "a.py", tmp_path / "b.py"
    small.write_text("x = 1\n")
    big.write_text("x = 1\n" * 500)
    grouped = schedule.chunks([str(small), str(big), str(tmp_path / "gone.py")], None, jobs=2)
    assert grouped[0] == [1]
    assert sorted(i for chunk in grouped for i in chunk) == [0, 1, 2]
