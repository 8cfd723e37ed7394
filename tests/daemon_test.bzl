"""daemon_test: a cc_test that starts the real tensord (tests/daemon_process.h)
and talks to it through the C++ client and the raw protocol."""

def daemon_test(name, data = [], deps = [], size = "medium", **kwargs):
    native.cc_test(
        name = name,
        size = size,
        srcs = [name + ".cc"],
        data = ["//server:tensord"] + data,
        deps = [
            "//tests:daemon_process",
            "//client:tensord_client",
            "//proto:tensord_proto",
            "@system//:absl",
            "@system//:gtest_main",
        ] + deps,
        **kwargs
    )
