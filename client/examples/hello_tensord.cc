// hello_tensord: the smallest useful tensord program.
//
//   bazel run //client/examples:hello_tensord            # $TENSORD_ADDRESS
//   bazel run //client/examples:hello_tensord -- 127.0.0.1:50051
//
// Every op below is sent in one batch; the program pays a network round trip
// only where it reads values (to_vector, item).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "client/tensord_client.h"

int main(int argc, char** argv) {
  tensord::ClientOptions options;
  options.client_name = "hello_tensord";
  if (argc > 1) options.address = argv[1];
  absl::StatusOr<std::unique_ptr<tensord::Client>> connected =
      tensord::Client::Connect(options);
  if (!connected.ok()) {
    std::fprintf(stderr, "hello_tensord: %s\n",
                 std::string(connected.status().ToString()).c_str());
    return 1;
  }
  tensord::Client& client = **connected;
  std::printf("connected to tensord %s at %s, session %s, default device %s\n",
              client.server_version().c_str(), client.address().c_str(),
              client.session_id().c_str(), client.default_device().c_str());

  // x = [[1, 2, 3],
  //      [4, 5, 6]]
  tensord::Tensor x = client.FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  // y = x + x = [[2, 4, 6],
  //              [8, 10, 12]]
  tensord::Tensor y = x + x;
  // z = y @ ones(3, 2): each entry is a row sum of y
  //   = [[2+4+6, 2+4+6],     = [[12, 12],
  //      [8+10+12, 8+10+12]]    [30, 30]]
  tensord::Tensor z = y.matmul(tensord::ones(client, {3, 2}));
  // z.sum() = 12 + 12 + 30 + 30 = 84
  tensord::Tensor total = z.sum();

  absl::StatusOr<std::vector<float>> values = z.to_vector<float>();
  absl::StatusOr<float> sum = total.item<float>();
  if (!values.ok() || !sum.ok()) {
    absl::Status error = values.ok() ? sum.status() : values.status();
    std::fprintf(stderr, "hello_tensord: %s\n",
                 std::string(error.ToString()).c_str());
    return 1;
  }
  std::printf("z = (x + x) @ ones(3, 2) = [%s]  (expected [12, 12, 30, 30])\n",
              absl::StrJoin(*values, ", ").c_str());
  std::printf("z.sum() = %g  (expected 84)\n", *sum);
  const bool correct =
      *values == std::vector<float>{12, 12, 30, 30} && *sum == 84.0f;
  std::printf("%s\n", correct ? "OK" : "MISMATCH");
  return correct ? 0 : 1;
}
