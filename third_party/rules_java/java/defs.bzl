# Offline stand-in for @rules_java//java:defs.bzl (Bazel's own tools load it).
java_import = native.java_import
java_library = native.java_library
java_binary = native.java_binary
java_runtime = native.java_runtime
java_toolchain = native.java_toolchain
java_proto_library = native.java_proto_library
java_test = native.java_test
