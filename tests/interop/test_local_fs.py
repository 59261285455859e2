"""The local file system the suite's Spark JVMs use (tests/interop/localfs, interop_spark_cluster.
local_fs): Hadoop's own, but chmod and readlink through java.nio instead of a new process per
call. These check that the session really uses it, and that it answers as Hadoop's own
RawLocalFileSystem does, side by side in the session's JVM: the modes it sets, and
getFileLinkStatus of a file, a directory, a symbolic link and a missing path, as plain paths and
as file: URIs. No Spark job runs: only calls into the session's JVM.
"""

from __future__ import annotations

import os
import stat

import pytest

from conftest import unavailable
from interop_spark_cluster import local_fs


@pytest.fixture(scope="module")
def hadoop(spark):
    """(jvm, ours, Hadoop's RawLocalFileSystem), both initialized with the session's settings."""
    if not local_fs()[0]:
        unavailable("tests/interop/localfs", "MEDALLION_INTEROP_LOCALFS_JAR unset (setup needs javac)")
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    uri = jvm.java.net.URI("file:///")
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(uri, conf)
    theirs = jvm.org.apache.hadoop.fs.RawLocalFileSystem()
    theirs.initialize(uri, conf)
    return jvm, fs, theirs


def test_session_uses_nio_local_fs(spark, hadoop):
    jvm, fs, _ = hadoop
    assert fs.getClass().getName() == "medallion.interop.NioLocalFileSystem"
    assert fs.getRawFileSystem().getClass().getName() == "medallion.interop.NioRawLocalFileSystem"
    fc = jvm.org.apache.hadoop.fs.FileContext.getFileContext(jvm.java.net.URI("file:///"),
                                                            spark._jsc.hadoopConfiguration())
    assert fc.getDefaultFileSystem().getClass().getName() == "medallion.interop.NioLocalFs"


@pytest.mark.parametrize("mode", ["644", "600", "755", "700", "640", "444", "751", "000", "1777"])
def test_modes_equal_hadoops(hadoop, tmp_path, mode):
    """setPermission leaves the same mode bits as Hadoop's chmod (the sticky bit through Hadoop's
    own code; FsPermission has no setuid or setgid bit)."""
    jvm, fs, theirs = hadoop
    got = {}
    for name, impl in (("ours", fs.getRawFileSystem()), ("hadoop", theirs)):
        for kind in ("file", "dir"):
            path = tmp_path / f"{name}-{kind}"
            path.mkdir() if kind == "dir" else path.write_text("x")
            impl.setPermission(jvm.org.apache.hadoop.fs.Path(str(path)),
                               jvm.org.apache.hadoop.fs.permission.FsPermission(mode))
            got[(name, kind)] = stat.S_IMODE(os.lstat(path).st_mode)
            os.chmod(path, 0o700)  # so that tmp_path can be removed
    for kind in ("file", "dir"):
        assert got[("ours", kind)] == got[("hadoop", kind)], (kind, {k: oct(v) for k, v in got.items()})
    assert got[("ours", "file")] == int(mode, 8)


def link_status(jvm, impl, path: str):
    try:
        st = impl.getFileLinkStatus(jvm.org.apache.hadoop.fs.Path(path))
    except Exception as err:  # noqa: BLE001 - py4j wraps Java's exception; its class is compared
        return ("error", err.java_exception.getClass().getName())
    return (st.isFile(), st.isDirectory(), st.isSymlink(), st.getLen(), st.getModificationTime(),
            st.getPermission().toString(), str(st.getSymlink()) if st.isSymlink() else None,
            st.getPath().toUri().getPath())


def test_link_status_equals_hadoops(hadoop, tmp_path):
    jvm, fs, theirs = hadoop
    (tmp_path / "file").write_text("some bytes")
    (tmp_path / "dir").mkdir()
    os.symlink(tmp_path / "file", tmp_path / "link")
    os.symlink(tmp_path / "gone", tmp_path / "dangling")
    ours = fs.getRawFileSystem()
    for name in ("file", "dir", "link", "dangling", "missing"):
        for path in (str(tmp_path / name), (tmp_path / name).as_uri()):
            assert link_status(jvm, ours, path) == link_status(jvm, theirs, path), path
    # The cases differ from each other (the comparison above could not pass by answering alike).
    plain = {n: link_status(jvm, ours, str(tmp_path / n)) for n in ("file", "dir", "link", "missing")}
    assert plain["file"][:3] == (True, False, False) and plain["dir"][:3] == (False, True, False)
    assert plain["link"][2] is True and plain["missing"][0] == "error"
