"""A library built on PyTorch, unmodified, on the tensord device: Hugging Face ``transformers``'
GPT-2 with a tiny random config (no downloads) trains to the same losses as on local PyTorch."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip(
    "transformers", reason="transformers is not installed (tools/install_deps.sh puts it in "
    ".venv-torch)")


def _train(model: object, device: str) -> list:
    model = model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 50, (2, 12), generator=g).to(device)
    losses = []
    for _ in range(3):
        loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_gpt2_trains_like_local_pytorch(td: object) -> None:
    config = transformers.GPT2Config(vocab_size=50, n_positions=16, n_embd=32, n_layer=2,
                                     n_head=2, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                     bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config)
    ref = _train(copy.deepcopy(model), "cpu")
    got = _train(model, "tensord")
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-5)
