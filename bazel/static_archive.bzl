"""cc_static_archive: one static archive holding this workspace's objects of a library and
everything it depends on in this workspace, for users who link statically outside Bazel.
Libraries from other repositories (@system: Debian's gRPC, protobuf, Abseil) stay out;
they come from their own packages (pkg-config --static names them).
"""

def _cc_static_archive_impl(ctx):
    archives = []
    for dep in ctx.attr.deps:
        for linker_input in dep[CcInfo].linking_context.linker_inputs.to_list():
            if linker_input.owner.workspace_name != "":
                continue
            for lib in linker_input.libraries:
                # PIC objects: Debian's compiler links position-independent executables.
                archive = lib.pic_static_library or lib.static_library
                if archive and archive not in archives:
                    archives.append(archive)
    out = ctx.actions.declare_file(ctx.attr.out)
    script = ctx.actions.declare_file(ctx.attr.name + ".mri")
    lines = ["CREATE " + out.path] + ["ADDLIB " + a.path for a in archives] + ["SAVE", "END"]
    ctx.actions.write(script, "\n".join(lines) + "\n")
    ctx.actions.run_shell(
        inputs = archives + [script],
        outputs = [out],
        command = "ar -M < %s && ranlib %s" % (script.path, out.path),
        mnemonic = "StaticArchive",
        progress_message = "Archiving %s" % out.short_path,
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

cc_static_archive = rule(
    implementation = _cc_static_archive_impl,
    attrs = {
        "deps": attr.label_list(providers = [CcInfo]),
        "out": attr.string(mandatory = True),
    },
)
