"""What pyproject.toml cannot say: the native core's place in a strict editable install.

setuptools-rust builds the extension in place for an editable install (into ``pipeline/``),
but reports no output for it, so setuptools' strict mode (``editable_mode=strict``, the
README's test command) would leave it out of the tree of links it installs, and the package
would run pure. This ``build_ext`` names the built file, as setuptools' own does for a C
extension. Everything else is in pyproject.toml.
"""

from __future__ import annotations

import os

from setuptools import setup
from setuptools.command.build_ext import build_ext


class BuildExtNamingTheNativeCore(build_ext):
    def get_output_mapping(self) -> dict[str, str]:
        mapping = super().get_output_mapping()
        if not self.inplace:
            return mapping
        build_rust = self.get_finalized_command("build_rust")
        for extension in getattr(self.distribution, "rust_extensions", []):
            built = build_rust.get_dylib_ext_path(extension, extension.name)
            if os.path.isfile(built):  # the build is optional: it may have failed
                package = extension.name.split(".")[:-1]
                mapping[os.path.join(self.build_lib, *package, os.path.basename(built))] = built
        return mapping


setup(cmdclass={"build_ext": BuildExtNamingTheNativeCore})
