"""Repository rule: cc_library targets for Debian's system libraries, flags from pkg-config.

Each entry of `libs` maps a target name to a list of pkg-config modules (or "-lNAME" link
flags for libraries that ship no .pc file). The flags are read when the repository is
fetched, so they stay correct for the installed packages; nothing is downloaded.
"""

def _pkg_config(ctx, args):
    res = ctx.execute(["pkg-config"] + args)
    if res.return_code != 0:
        fail("pkg-config %s failed: %s (run tools/install_deps.sh)" % (" ".join(args), res.stderr))
    return [f for f in res.stdout.strip().replace("\n", " ").split(" ") if f]

def _system_libs_impl(ctx):
    out = ['package(default_visibility = ["//visibility:public"])', ""]
    for name, modules in ctx.attr.libs.items():
        pc = [m for m in modules if not m.startswith("-")]
        raw = [m for m in modules if m.startswith("-")]
        linkopts = []
        defines = []
        includes = []
        if pc:
            linkopts = _pkg_config(ctx, ["--libs"] + pc)
            for flag in _pkg_config(ctx, ["--cflags"] + pc):
                if flag.startswith("-D"):
                    defines.append(flag[2:])
                elif flag.startswith("-I"):
                    # Headers outside /usr/include (e.g. HDF5's serial flavour): linked
                    # into the repository, so that the sandbox and `includes` reach them.
                    where = "inc/%s/%d" % (name, len(includes))
                    ctx.symlink(flag[2:], where)
                    includes.append(where)
        headers = ", ".join(['glob(["%s/**/*.h"])' % i for i in includes]) or "[]"
        linkopts = linkopts + raw
        out.append("cc_library(")
        out.append("    name = %r," % name)
        out.append("    linkopts = %r," % linkopts)
        out.append("    defines = %r," % defines)
        out.append("    hdrs = %s," % headers.replace(", ", " + "))
        out.append("    includes = %r," % includes)
        if name == "absl":
            # TSan builds: tell TSan what absl::Mutex does (Debian's Abseil is not
            # instrumented); see bazel/tsan.
            out.append('    deps = select({"@//bazel/tsan:enabled": ' +
                       '["@//bazel/tsan:absl_mutex_annotations"], "//conditions:default": []}),')
        out.append(")")
        out.append("")
        # The same libraries linked from their static archives (for self-contained
        # binaries, e.g. the GPU checks that run on a machine without these packages).
        static = ["-Wl,-Bstatic"] + [f for f in linkopts if f.startswith("-l") and
                                     f not in ("-lrt", "-lpthread", "-ldl", "-lm")] + \
                 ["-Wl,-Bdynamic"] + [f for f in linkopts if not f.startswith("-l") or
                                      f in ("-lrt", "-lpthread", "-ldl", "-lm")]
        out.append("cc_library(")
        out.append("    name = %r," % (name + "_static"))
        out.append("    linkopts = %r," % static)
        out.append("    defines = %r," % defines)
        out.append(")")
        out.append("")
    ctx.file("BUILD.bazel", "\n".join(out))
    ctx.file("WORKSPACE", 'workspace(name = "%s")\n' % ctx.name)

system_libs = repository_rule(
    implementation = _system_libs_impl,
    attrs = {"libs": attr.string_list_dict(mandatory = True)},
    local = True,
)

def _cuda_impl(ctx):
    root = ctx.os.environ.get("CUDA_PATH", "/usr/local/cuda")
    have = ctx.path(root + "/include/cuda_runtime_api.h").exists
    if have:
        ctx.symlink(root + "/include", "include")
        ctx.symlink(root + "/lib64", "lib64")
        build = """
package(default_visibility = ["//visibility:public"])
# The shared runtime for everything built with --config=cuda (tests run on it here).
cc_library(
    name = "cudart",
    hdrs = glob(["include/**/*.h", "include/**/*.hpp"]),
    includes = ["include"],
    linkopts = ["-L%s/lib64", "-lcudart", "-Wl,-rpath,%s/lib64"],
)

# The static runtime, for self-contained GPU binaries that run where only the NVIDIA
# driver is installed (gpu/device_check.sh).
cc_library(
    name = "cudart_static",
    hdrs = glob(["include/**/*.h", "include/**/*.hpp"]),
    includes = ["include"],
    srcs = ["lib64/libcudart_static.a"],
    linkopts = ["-ldl", "-lpthread", "-lrt"],
    alwayslink = True,
)
""" % (root, root)
    else:
        build = """
package(default_visibility = ["//visibility:public"])
# CUDA was not found at %s; --config=cuda cannot build here.
cc_library(name = "cudart", srcs = [], linkopts = ["-lcudart-not-found"])
cc_library(name = "cudart_static", srcs = [], linkopts = ["-lcudart-not-found"])
""" % root
    ctx.file("BUILD.bazel", build)
    ctx.file("WORKSPACE", 'workspace(name = "%s")\n' % ctx.name)

local_cuda = repository_rule(
    implementation = _cuda_impl,
    environ = ["CUDA_PATH"],
    local = True,
)

def _testdata_dir_impl(ctx):
    root = ctx.path(Label("@//:WORKSPACE")).dirname
    res = ctx.execute(["realpath", "-m", "%s/%s" % (root, ctx.attr.path)])
    path = res.stdout.strip()
    exists = ctx.path(path).exists
    ctx.file("testdata_dir.h", "\n".join([
        "// Generated: where the shared test files are (empty when absent).",
        "#pragma once",
        "#define %s \"%s\"" % (ctx.attr.macro, path if exists else ""),
        "",
    ]))
    ctx.file("testdata_dir.py", "\n".join([
        "# Generated: where the shared test files are (empty when absent).",
        "%s = \"%s\"" % (ctx.attr.macro, path if exists else ""),
        "",
    ]))
    ctx.file("BUILD.bazel", """
package(default_visibility = ["//visibility:public"])
cc_library(name = "dir", hdrs = ["testdata_dir.h"], includes = ["."])
py_library(name = "dir_py", srcs = ["testdata_dir.py"], imports = ["."])
""")
    ctx.file("WORKSPACE", 'workspace(name = "%s")\n' % ctx.name)

# Exposes the absolute path of a directory outside the workspace (the shared test files)
# to C++ tests as a macro and to Python tests as a module constant, without copying its
# files into runfiles.
testdata_dir = repository_rule(
    implementation = _testdata_dir_impl,
    attrs = {"path": attr.string(mandatory = True), "macro": attr.string(mandatory = True)},
    local = True,
)
