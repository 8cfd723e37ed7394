"""The GPU benchmark's table from a run's ``raw:`` figures (tools/bench/run_gpu.py): the table is
printed at the end of a device run that cannot be repeated cheaply, so it is rendered here from
the figures the H200 printed (session 18), with its ratios checked by hand."""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools", "bench"))
import run_gpu  # noqa: E402

RAW = json.loads("""{"cpp": {"gpu": "NVIDIA H200", "tiny_ops_per_s": 147468,
 "matmul_float32_tflops": 51.2427, "matmul_bfloat16_tflops": 783.529, "matmul_n": 8192},
 "th_tiny": {"ops_per_s": 90191.0}, "py_tiny": {"ops_per_s": 132145.2},
 "py_sync": {"p50_us": 217.7, "p99_us": 390.7}, "th_sync": {"p50_us": 23.0, "p99_us": 40.7},
 "py_mm_float32": {"tflops": 51.10}, "th_mm_float32": {"tflops": 51.23},
 "py_mm_bfloat16": {"tflops": 671.0}, "th_mm_bfloat16": {"tflops": 715.2},
 "py_mlp": {"step_s": 0.0016264}, "th_mlp": {"step_s": 0.0013709},
 "py_cnn": {"step_s": 0.0040028}, "th_cnn": {"step_s": 0.0019995},
 "py_resnet": {"step_s": 0.0142788}, "th_resnet": {"step_s": 0.0050241},
 "py_resnet_replay": {"step_s": 0.0110507}, "n": 8192, "ops": 50000}""")


def test_the_table_of_a_runs_figures(capsys) -> None:
    run_gpu.table(RAW, "2.11.0+cu130").print()
    out = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:]]
            for line in out.splitlines() if line.startswith("|")}
    # 147468 / 90191 = 1.635; 0.0142788 / 0.0050241 = 2.842; 671.0 / 715.2 = 0.938
    assert rows["tiny ops on cuda, runtime in process (cuda_bench) (ops/s)"][2] == "1.64x"
    assert rows["train step on cuda, ResNet-style CIFAR b64"][:3] == ["14.28 ms", "5.02 ms",
                                                                     "2.84x"]
    assert rows["matmul 8192^2 bfloat16, Python client (TFLOP/s)"][2:5] == ["0.94x", ">= 0.9x",
                                                                           "yes"]
    assert rows["train step on cuda, ResNet-style CIFAR b64, with graph replay"][2] == "2.20x"
    assert "train step on cuda, MLP 784-1024-1024-10 b256, with graph replay" not in rows


def test_the_gpt_row_when_a_run_has_it(capsys) -> None:
    # Figures made up for the check: 0.1234 / 0.0987 = 1.250 (over the 1.15x aim).
    raw = dict(RAW, py_gpt={"step_s": 0.1234}, th_gpt={"step_s": 0.0987})
    run_gpu.table(raw, "2.11.0+cu130").print()
    rows = [line for line in capsys.readouterr().out.splitlines() if "GPT-2 small" in line]
    assert len(rows) == 1
    assert [c.strip() for c in rows[0].split("|")[2:7]] == ["123.40 ms", "98.70 ms", "1.25x",
                                                            "<= 1.15x", "NO"]
