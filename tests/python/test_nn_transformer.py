"""tensord.nn's attention against torch 1.13: scaled_dot_product_attention (against the
formula in torch: 1.13 has no public SDPA), MultiheadAttention, TransformerEncoderLayer and
TransformerEncoder with the torch modules' weights; forward values (and attention weights),
gradients w.r.t. the inputs and every parameter, masks both ways, batch_first both ways."""

import copy
import math

import numpy as np
import pytest
import torch

import tensord as td
from nn_compare import compare_function, compare_module, load_torch_weights, rand
from helpers import shapeless
from sdpa_reference import bool_mask, reference

pytestmark = pytest.mark.usefixtures("session")
F = td.nn.functional


@pytest.mark.parametrize("kw", [dict(), dict(is_causal=True), dict(scale=0.3),
                                dict(attn_mask=bool_mask(5, 7)),
                                dict(attn_mask=bool_mask(2, 1, 5, 7)),
                                dict(attn_mask=rand(3, 5, 7, seed=4))])
def test_scaled_dot_product_attention(kw):
    q, k, v = rand(2, 3, 5, 4), rand(2, 3, 7, 4, seed=1), rand(2, 3, 7, 6, seed=2)
    compare_function(F.scaled_dot_product_attention, reference, [q, k, v],
                     grad_inputs=[0, 1, 2], **kw)


@pytest.mark.parametrize("shapes_on_client", [False, True])
def test_sdpa_queues_without_waiting_for_shapes(shapes_on_client):
    # Note [Attention without shape waits]: with fresh operands (op results, whose shapes come
    # with their Ack) the daemon makes the causal mask and the scale and the call waits for
    # nothing; with shapes the client has, the scale is a float. The same values either way, for 2-d and 4-d operands.
    for shape_q, shape_kv in (((5, 4), (7, 4)), ((2, 3, 5, 4), (2, 3, 7, 4))):
        arrays = [rand(*shape_q), rand(*shape_kv, seed=1), rand(*shape_kv, seed=2)]
        want = reference(*(torch.from_numpy(a) for a in arrays), is_causal=True)
        q, k, v = (td.tensor(a) for a in arrays)
        if not shapes_on_client:
            q, k, v = (shapeless(t) for t in (q, k, v))
        else:
            assert [t.dim() for t in (q, k, v)] == [len(shape_q)] + [len(shape_kv)] * 2
        waits = td.default_session().waits
        got = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        assert td.default_session().waits == waits
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_sdpa_dropout_drops_attention_weights():
    td.manual_seed(0)
    q, k = td.tensor(rand(4, 64, 8)), td.tensor(rand(4, 64, 8, seed=1))
    eye = td.tensor(np.broadcast_to(np.eye(64, dtype=np.float32), (4, 64, 64)).copy())
    w = F.scaled_dot_product_attention(q, k, eye).numpy()  # value = identity: the weights
    dropped = F.scaled_dot_product_attention(q, k, eye, dropout_p=0.25).numpy()
    zero = dropped == 0
    assert 0.22 < zero.mean() < 0.28
    np.testing.assert_allclose(dropped[~zero], w[~zero] / 0.75, rtol=1e-5)


def test_sdpa_rejects_bad_forms():
    q = td.tensor(rand(2, 3, 4))
    with pytest.raises(ValueError, match="either attn_mask or is_causal"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=td.tensor(bool_mask(3, 3)),
                                       is_causal=True)
    with pytest.raises(NotImplementedError, match=r"not supported yet: .*enable_gqa.*\(use"):
        F.scaled_dot_product_attention(q, q, q, enable_gqa=True, dropout_p=0.5)
    k = td.tensor(rand(2, 3, 5))
    assert (q.shape, k.shape) == ((2, 3, 4), (2, 3, 5))  # now the client has them: checked
    with pytest.raises(RuntimeError, match=r"query \[2, 3, 4\] and key \[2, 3, 5\]"):
        F.scaled_dot_product_attention(q, k, k)
    # Shapes the client has not yet: the daemon's scaled_dot_product_attention row rejects
    # them, raised at the next read (Note [Attention without shape waits]).
    y = F.scaled_dot_product_attention(q, shapeless(td.tensor(rand(2, 3, 5))),
                                       shapeless(td.tensor(rand(2, 3, 5))))
    with pytest.raises(RuntimeError, match=r"scaled_dot_product_attention.*query \[2, 3, 4\] "
                                           r"and key \[2, 3, 5\] must share"):
        y.numpy()


class SelfAttention(td.nn.Module):
    """``attn(x, x, x, ...)``: the packed projection path (query is key is value)."""

    def __init__(self, attn):
        super().__init__()
        self.attn = attn

    def forward(self, x, **kw):
        return self.attn(x, x, x, **kw)


class TorchSelfAttention(torch.nn.Module):
    def __init__(self, attn):
        super().__init__()
        self.attn = attn

    def forward(self, x, **kw):
        return self.attn(x, x, x, **kw)


MHA_CASES = [
    dict(batch_first=True),
    dict(batch_first=False),
    dict(batch_first=True, bias=False),
    dict(batch_first=True, masks=dict(attn_mask=~bool_mask(5, 5))),
    dict(batch_first=False, masks=dict(attn_mask=rand(2 * 4, 5, 5, seed=3))),
    dict(batch_first=True, masks=dict(key_padding_mask=~bool_mask(2, 5, seed=1))),
    dict(batch_first=False, masks=dict(key_padding_mask=~bool_mask(2, 5, seed=2),
                                       attn_mask=~bool_mask(5, 5, seed=3))),
    dict(batch_first=True, masks=dict(need_weights=True, average_attn_weights=False)),
]


@pytest.mark.parametrize("case", MHA_CASES)
def test_multihead_self_attention(case):
    case = dict(case)
    masks = case.pop("masks", {})
    m = SelfAttention(td.nn.MultiheadAttention(8, 4, **case))
    tm = TorchSelfAttention(torch.nn.MultiheadAttention(8, 4, **case))
    shape = (2, 5, 8) if case["batch_first"] else (5, 2, 8)
    for out in (0, 1):  # the output, then the attention weights (head-averaged by default)
        compare_module(m, tm, [rand(*shape)], kwargs=masks, grad_inputs=[0], output=out)
        m.zero_grad(), tm.zero_grad()


@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_cross_attention_with_kdim_vdim(batch_first):
    kw = dict(kdim=6, vdim=3, batch_first=batch_first)
    m, tm = td.nn.MultiheadAttention(8, 2, **kw), torch.nn.MultiheadAttention(8, 2, **kw)
    assert list(m.state_dict()) == list(tm.state_dict())
    q, k, v = ((2, 4, 8), (2, 7, 6), (2, 7, 3)) if batch_first else (
        (4, 2, 8), (7, 2, 6), (7, 2, 3))
    compare_module(m, tm, [rand(*q), rand(*k, seed=1), rand(*v, seed=2)], grad_inputs=[0, 1, 2],
                   kwargs=dict(key_padding_mask=~bool_mask(2, 7)), output=0)


def test_multihead_attention_unbatched_and_packed_cross_attention():
    m, tm = td.nn.MultiheadAttention(8, 2), torch.nn.MultiheadAttention(8, 2)
    compare_module(m, tm, [rand(4, 8), rand(6, 8, seed=1), rand(6, 8, seed=2)],
                   grad_inputs=[0, 1, 2], kwargs=dict(key_padding_mask=~bool_mask(6)), output=0)
    m.zero_grad(), tm.zero_grad()
    compare_module(m, tm, [rand(4, 8), rand(6, 8, seed=1), rand(6, 8, seed=2)],
                   kwargs=dict(attn_mask=rand(2, 4, 6, seed=5)), output=1)


def test_multihead_attention_dropout_in_training_only():
    td.manual_seed(0)
    m = td.nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True)
    x = td.tensor(rand(2, 40, 8))
    kw = dict(need_weights=True, average_attn_weights=False)
    w = m(x, x, x, **kw)[1].numpy()
    zero = w == 0
    assert 0.45 < zero.mean() < 0.55
    m.eval()
    w_eval = m(x, x, x, **kw)[1].numpy()
    assert not (w_eval == 0).any()
    np.testing.assert_allclose(w[~zero], w_eval[~zero] * 2, rtol=1e-5)


def test_multihead_attention_init_and_errors():
    td.manual_seed(0)
    m = td.nn.MultiheadAttention(16, 4)
    assert [n for n, _ in m.named_parameters()] == [
        n for n, _ in torch.nn.MultiheadAttention(16, 4).named_parameters()]
    w = m.in_proj_weight.numpy()
    bound = math.sqrt(6 / (48 + 16))  # xavier: fan_in 16, fan_out 48
    assert np.abs(w).max() <= bound and w.std() == pytest.approx(bound / math.sqrt(3), rel=0.2)
    assert not m.in_proj_bias.numpy().any() and not m.out_proj.bias.numpy().any()
    with pytest.raises(ValueError, match=r"embed_dim \(10\) must be divisible by num_heads"):
        td.nn.MultiheadAttention(10, 4)
    with pytest.raises(NotImplementedError, match=r"not supported yet: .*add_bias_kv.*\(use"):
        td.nn.MultiheadAttention(16, 4, add_bias_kv=True)
    x = td.tensor(rand(3, 2, 16))
    with pytest.raises(RuntimeError, match=r"query \[3, 2, 12\].*expected last dims 16"):
        y = td.tensor(rand(3, 2, 12))
        m(y, y, y)
    with pytest.raises(RuntimeError, match=r"must all be 3-d \(batched\) or all 2-d"):
        m(x, td.tensor(rand(2, 16)), td.tensor(rand(2, 16)))
    with pytest.raises(RuntimeError, match=r"attn_mask of shape \[2, 2\] should be \[3, 3\]"):
        m(x, x, x, attn_mask=td.tensor(bool_mask(2, 2)))
    with pytest.raises(RuntimeError, match=r"key_padding_mask of shape \[3, 3\] should be "
                                           r"\[2, 3\]"):
        m(x, x, x, key_padding_mask=td.tensor(bool_mask(3, 3)))


def perturb(tmod, seed=0):
    """Distinct values in every parameter (layers copied by TransformerEncoder start equal)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in tmod.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.1)


LAYER_CASES = [dict(), dict(batch_first=True), dict(norm_first=True, activation="gelu"),
               dict(batch_first=True, norm_first=True, layer_norm_eps=1e-3)]


@pytest.mark.parametrize("kw", LAYER_CASES)
@pytest.mark.parametrize("masked", [False, True])
def test_transformer_encoder_layer(kw, masked):
    m = td.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **kw)
    tm = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **kw)
    perturb(tm)
    shape = (2, 5, 8) if kw.get("batch_first") else (5, 2, 8)
    masks = dict(src_mask=rand(5, 5, seed=3), src_key_padding_mask=~bool_mask(2, 5)) \
        if masked else {}
    compare_module(m, tm, [rand(*shape)], kwargs=masks, grad_inputs=[0])


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_encoder(batch_first):
    layer = td.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=batch_first)
    m = td.nn.TransformerEncoder(layer, 3, norm=td.nn.LayerNorm(8))
    tlayer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=batch_first)
    tm = torch.nn.TransformerEncoder(tlayer, 3, norm=torch.nn.LayerNorm(8),
                                     enable_nested_tensor=False)
    assert list(m.state_dict()) == list(tm.state_dict())
    perturb(tm, seed=1)
    m.eval(), tm.eval()  # dropout off (torch's fast path stays off: grad is enabled)
    shape = (2, 6, 8) if batch_first else (6, 2, 8)
    compare_module(m, tm, [rand(*shape)], grad_inputs=[0],
                   kwargs=dict(mask=~bool_mask(6, 6), src_key_padding_mask=~bool_mask(2, 6)))


def test_transformer_encoder_is_causal_and_its_own_parameters():
    layer = td.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    m = td.nn.TransformerEncoder(layer, 2)
    tm = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), 2)
    perturb(tm, seed=2)
    causal = torch.triu(torch.full((5, 5), float("-inf")), 1).numpy()
    # is_causal without a mask: the causal mask made by the module (torch 1.13 takes the mask)
    compare_module(m, tm, [rand(2, 5, 8)], kwargs=dict(is_causal=True),
                   torch_kwargs=dict(mask=causal), grad_inputs=[0])
    load_torch_weights(tm, m)
    assert m.layers[0].linear1.weight._handle != layer.linear1.weight._handle
    twin = copy.deepcopy(m)
    with td.no_grad():
        m.layers[1].linear2.weight.zero_()
    assert twin.layers[1].linear2.weight.numpy().any()
    np.testing.assert_array_equal(twin.layers[0].norm1.weight.numpy(),
                                  tm.layers[0].norm1.weight.detach().numpy())


def test_transformer_encoder_layer_rejects_unknown_activation():
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        td.nn.TransformerEncoderLayer(8, 2, activation="tanh")
