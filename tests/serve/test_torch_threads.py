"""A server process runs torch on one thread: its requests, not torch, are the parallelism."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(("omp", "expected"), [(None, 1), ("3", 2)])
def test_one_torch_thread_unless_omp_num_threads_is_set(monkeypatch, omp, expected):
    from imad.serve.scoring.processes import use_one_torch_thread

    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    if omp is not None:
        monkeypatch.setenv("OMP_NUM_THREADS", omp)
    torch.set_num_threads(2)
    try:
        use_one_torch_thread()
        assert torch.get_num_threads() == expected  # 2: the user's setting is left alone
    finally:
        torch.set_num_threads(before)
