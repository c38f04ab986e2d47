"""The wheel's build hook (issue 41, decision PK-5): the git commit the wheel is built from goes into it as
tagengine/_internal/commit.txt, so an installed `tagengine --version` names it (`pipx install git+URL` builds
from a clone, which has its history). Built without git (from an sdist), the wheel has no such file and
`--version` names the version alone. An editable install writes nothing: it reads the checkout's commit when
asked. The commit is read by `tagengine/_internal/version.py`'s `git_commit`, loaded here by its path (it is
stdlib only), so the build and a checkout read it one way.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

TARGET = "tagengine/_internal/commit.txt"  # version.COMMIT_FILE, beside version.py


class CommitHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        self._written: str | None = None
        if version == "editable":
            return
        spec = importlib.util.spec_from_file_location("_tagengine_version", Path(self.root) / "tagengine" /
                                                      "_internal" / "version.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        commit = module.git_commit(Path(self.root))
        if commit is None:
            return
        fd, path = tempfile.mkstemp(prefix="tagengine-commit-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(commit + "\n")
        build_data["force_include"][path] = TARGET
        self._written = path

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if self._written is not None:
            os.unlink(self._written)
