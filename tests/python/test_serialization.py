"""td.save / td.load: state dicts through a NumPy .npz file, readable with NumPy alone."""

import json
from collections import OrderedDict

import numpy as np
import pytest
import torch

import tensord as td
from helpers import from_torch

pytestmark = pytest.mark.usefixtures("session")


def test_round_trip_of_nested_state(tmp_path):
    bf = torch.tensor([1.5, -2.25, 3.0e20, 1.0 / 3]).bfloat16()
    obj = {
        "model": OrderedDict(w=td.randn(3, 4), b=td.arange(5), mask=td.tensor([True, False])),
        "half": td.tensor([1.0, 2.5], dtype=td.float16),
        "bf16": from_torch(bf),
        "scalar": td.tensor(3.5, dtype=td.float64),
        "opt": {"state": {0: {"step": 3, "exp_avg": td.ones(2)}},
                "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0]}]},
        "names": ["a", None, 1, 2.5, True],
        "array": np.arange(3, dtype=np.int32),
    }
    path = tmp_path / "ckpt.tdt"
    td.save(obj, str(path))
    assert path.exists()  # the exact path, no .npz added
    back = td.load(str(path))
    assert isinstance(back["model"], OrderedDict) and list(back["model"]) == ["w", "b", "mask"]
    for k in ("w", "b", "mask"):
        a, b = obj["model"][k], back["model"][k]
        assert a.dtype is b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert back["half"].dtype is td.float16 and back["half"].tolist() == [1.0, 2.5]
    assert back["bf16"].dtype is td.bfloat16
    np.testing.assert_array_equal(back["bf16"].numpy(), bf.float().numpy())
    assert back["scalar"].dtype is td.float64 and back["scalar"].shape == ()
    assert back["opt"]["state"][0]["step"] == 3
    assert back["opt"]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert back["names"] == ["a", None, 1, 2.5, True]
    np.testing.assert_array_equal(back["array"], np.arange(3))


def test_file_is_plain_numpy(tmp_path):
    path = tmp_path / "m.npz"
    td.save({"w": td.tensor([[1.0, 2.0]]), "bf": td.tensor([1.0, -2.0], dtype=td.bfloat16)},
            str(path))
    with np.load(str(path), allow_pickle=False) as z:
        manifest = json.loads(str(z["__manifest__"]))
        entries = dict(manifest["object"]["dict"])
        np.testing.assert_array_equal(z[entries["w"]["tensor"]], [[1.0, 2.0]])
        assert entries["bf"]["dtype"] == "bfloat16"
        bits = z[entries["bf"]["tensor"]]
        assert bits.dtype == np.uint16
        np.testing.assert_array_equal((bits.astype(np.uint32) << 16).view(np.float32),
                                      [1.0, -2.0])


def test_module_state_dict_round_trip_and_torch_tensors(tmp_path):
    net = td.nn.Sequential(td.nn.Linear(3, 4), td.nn.BatchNorm1d(4))
    path = str(tmp_path / "net.npz")
    td.save(net.state_dict(), path)
    other = td.nn.Sequential(td.nn.Linear(3, 4), td.nn.BatchNorm1d(4))
    other.load_state_dict(td.load(path))
    for (k, a), (_, b) in zip(net.state_dict().items(), other.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)
    tnet = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    td.save(tnet.state_dict(), path)  # torch tensors save too
    other.load_state_dict(td.load(path))
    np.testing.assert_array_equal(other[0].weight.numpy(), tnet[0].weight.detach().numpy())


def test_file_objects_and_map_location(tmp_path):
    import io
    buf = io.BytesIO()
    td.save([td.ones(2)], buf)
    buf.seek(0)
    (t,) = td.load(buf, map_location="cpu")
    assert t.device == td.device("cpu") and t.tolist() == [1.0, 1.0]


def test_unsupported_objects_are_refused(tmp_path):
    with pytest.raises(TypeError, match="cannot save"):
        td.save({"f": object()}, str(tmp_path / "x"))
