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


def test_chunks_shrink_as_the_work_left_shrinks():
    # A run must not end on one worker's big last chunk while the others have nothing left.
    paths = [f"f{i}.py" for i in range(60)]
    data = [b"x" * 1000 for _ in paths]
    grouped = schedule.chunks(paths, data, jobs=2)
    sizes = [len(chunk) for chunk in grouped]
    # the first: half of each worker's even share of 60,000 bytes (15 files), then half of what is left
    assert sizes[:4] == [15, 11, 8, 6]
    assert sizes == sorted(sizes, reverse=True)
    assert sizes[-1] == 1
    assert sorted(i for chunk in grouped for i in chunk) == list(range(60))


def test_no_chunk_is_smaller_than_an_even_share_of_many_chunks():
    paths = [f"f{i}.py" for i in range(1280)]
    data = [b"x" * 10 for _ in paths]
    grouped = schedule.chunks(paths, data, jobs=2)
    # 12,800 bytes: never under 12,800 / (2 x 64) = 100 bytes, 10 files, but for the last
    assert min(len(chunk) for chunk in grouped[:-1]) == 10
    assert max(len(chunk) for chunk in grouped) == schedule.MAX_FILES_PER_CHUNK


def test_sizes_on_disk_when_the_parent_did_not_read(tmp_path):
    small, big = tmp_path / "a.py", tmp_path / "b.py"
    small.write_text("x = 1\n")
    big.write_text("x = 1\n" * 500)
    grouped = schedule.chunks([str(small), str(big), str(tmp_path / "gone.py")], None, jobs=2)
    assert grouped[0] == [1]
    assert sorted(i for chunk in grouped for i in chunk) == [0, 1, 2]
