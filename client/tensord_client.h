// The tensord C++ client: include this one header.
// See client/client.h (connection), client/tensor.h (Tensor),
// client/ops.h (op functions), client/autograd.h (NoGradGuard,
// autograd::grad) and client/optim.h (SGD, Adam).
#ifndef TENSORD_CLIENT_TENSORD_CLIENT_H_
#define TENSORD_CLIENT_TENSORD_CLIENT_H_

#include "client/attrs.h"
#include "client/autograd.h"
#include "client/client.h"
#include "client/dtype.h"
#include "client/ops.h"
#include "client/optim.h"
#include "client/options.h"
#include "client/shared_buffer.h"
#include "client/site.h"
#include "client/status.h"
#include "client/tensor.h"

#endif  // TENSORD_CLIENT_TENSORD_CLIENT_H_
