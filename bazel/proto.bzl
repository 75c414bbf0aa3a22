"""One-line C++ and Python gRPC code generation with Debian's protoc and plugins."""

def shotstream_proto(name, src, visibility = None):
    """Generates `<name>_pb_cc` (messages), `<name>_cc` (messages and services) and
    `<name>_py_srcs` (the *_pb2*.py files).

    The import path of `src` is its path from the workspace root minus a leading
    "proto/", so `proto/shotstream/v1/x.proto` is imported as `shotstream/v1/x.proto`
    and its Python modules are `shotstream.v1.x_pb2` / `x_pb2_grpc`.
    """
    base = src[:-len(".proto")]
    pkg = native.package_name()
    rel = pkg[len("proto/"):] if pkg.startswith("proto/") else pkg
    cc_outs = [base + ".pb.h", base + ".pb.cc", base + ".grpc.pb.h", base + ".grpc.pb.cc"]
    py_outs = [base + "_pb2.py", base + "_pb2_grpc.py"]
    native.genrule(
        name = name + "_cc_gen",
        srcs = [src],
        outs = cc_outs,
        cmd = ("protoc -Iproto --cpp_out=$(GENDIR)/proto --grpc_out=$(GENDIR)/proto " +
               "--plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin proto/%s/%s") % (rel, src),
    )
    native.genrule(
        name = name + "_py_gen",
        srcs = [src],
        outs = py_outs,
        cmd = ("protoc -Iproto --python_out=$(GENDIR)/proto --grpc_python_out=$(GENDIR)/proto " +
               "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin proto/%s/%s") % (rel, src),
    )
    # The messages alone (protobuf, no gRPC), for code that builds or reads them without
    # a transport (the stream window); the services on top.
    native.cc_library(
        name = name + "_pb_cc",
        srcs = [base + ".pb.cc"],
        hdrs = [base + ".pb.h"],
        include_prefix = rel,
        strip_include_prefix = "",
        deps = ["@system//:protobuf"],
        visibility = visibility,
    )
    native.cc_library(
        name = name + "_cc",
        srcs = [base + ".grpc.pb.cc"],
        hdrs = [base + ".grpc.pb.h"],
        include_prefix = rel,
        strip_include_prefix = "",
        deps = [":" + name + "_pb_cc", "@system//:grpc"],
        visibility = visibility,
    )
    native.filegroup(
        name = name + "_py_srcs",
        srcs = py_outs,
        visibility = visibility,
    )
