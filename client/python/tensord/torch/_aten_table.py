"""The whole table of ATen rules (``RULES``): ``_aten_map``'s rows and those of every module
that adds its own (they register into ``_aten_map.RULES`` when imported), imported here in
order, so that the rule modules import ``_aten_map`` and nothing imports them back."""

from __future__ import annotations

from . import _aten_map
from . import _aten_map_backward, _aten_map_math, _aten_map_nn  # noqa: F401
from . import _aten_map_prims, _aten_map_index  # noqa: F401
from . import _composites, _indexing, _pooling, _strided  # noqa: F401
from . import _foreach_composites  # noqa: F401 (Adam's foreach steps)
from . import _aten_map_select, _aten_map_scan, _data_sized, _resize  # noqa: F401
from . import _aten_map_linalg, _aten_map_qr  # noqa: F401
from . import _aten_map_distance, _histogram  # noqa: F401
from . import _attention  # noqa: F401 (flash attention's backward rule)
from . import _linear  # noqa: F401 (aten.linear as one Call: Note [One linear])
from . import _convolution  # noqa: F401
from . import _grid_sample  # noqa: F401
from . import _ctc_loss, _embedding_bag, _margin_loss, _segment_reduce  # noqa: F401
from . import _histogramdd, _trilinear, _upsample_aa  # noqa: F401

RULES = _aten_map.RULES
