"""Neural-network building blocks, laid out as ``torch.nn``: ``Module`` and containers,
``Parameter``, layers, losses, ``functional`` and ``init``."""

from . import functional, init, utils
from .activation import *  # noqa: F401,F403
from .activation import __all__ as _activation_all
from .attention import MultiheadAttention
from .conv import *  # noqa: F401,F403
from .conv import __all__ as _conv_all
from .layers import *  # noqa: F401,F403
from .layers import __all__ as _layers_all
from .normalization import *  # noqa: F401,F403
from .normalization import __all__ as _normalization_all
from .pooling import *  # noqa: F401,F403
from .pooling import __all__ as _pooling_all
from .rnn import GRU, LSTM, RNN, RNNBase  # noqa: F401
from .rnn_cells import GRUCell, LSTMCell, RNNCell, RNNCellBase  # noqa: F401
from .containers import ModuleDict, ModuleList, Sequential
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss,  # noqa: F401
                   KLDivLoss, L1Loss, MSELoss, NLLLoss, SmoothL1Loss)
from .module import Module
from .parameter import Parameter
from .transformer import TransformerEncoder, TransformerEncoderLayer

__all__ = ["functional", "init", "utils", "Module", "ModuleDict", "ModuleList", "Sequential",
           "Parameter", "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss",
           "KLDivLoss", "L1Loss", "MSELoss", "NLLLoss", "SmoothL1Loss", "MultiheadAttention",
           "TransformerEncoder", "TransformerEncoderLayer", "RNNBase", "RNN", "LSTM", "GRU",
           "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"] + (
               _layers_all + _conv_all + _normalization_all + _activation_all + _pooling_all)
