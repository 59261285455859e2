package medallion.interop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system without a child process per file.
 *
 * Without Hadoop's native library (pyspark ships none) RawLocalFileSystem runs a process where
 * the native library would make a system call: `chmod` for every file it creates with a
 * permission (each Delta commit, each streaming checkpoint and state store file, and each one's
 * .crc), and `readlink` for every getFileLinkStatus (FileContext asks it of both sides of every
 * rename: Spark's checkpoint and state store writes, Delta's log writes), each through the JVM's
 * jspawnhelper: two execs a call. Here java.nio does both, with the same results; anything
 * java.nio cannot say the same way goes to Hadoop's own code.
 */
public class NioRawLocalFileSystem extends RawLocalFileSystem {
  @Override
  public void setPermission(Path p, FsPermission permission) throws IOException {
    if (permission.getStickyBit() || (permission.toShort() & 07000) != 0) {
      super.setPermission(p, permission);
      return;
    }
    Files.setPosixFilePermissions(pathToFile(p).toPath(), posix(permission));
  }

  /**
   * Hadoop's answer is getFileStatus(f) unless `readlink` names a target, i.e. unless f is a
   * symbolic link (and even then not for a file: URI, which readlink cannot open): a path that
   * is no link gets getFileStatus(f) without the process; a link goes to Hadoop's own code.
   */
  @Override
  public FileStatus getFileLinkStatus(Path f) throws IOException {
    if (!Files.isSymbolicLink(pathToFile(f).toPath())) {
      return getFileStatus(f);
    }
    return super.getFileLinkStatus(f);
  }

  static Set<PosixFilePermission> posix(FsPermission permission) {
    Set<PosixFilePermission> out = EnumSet.noneOf(PosixFilePermission.class);
    add(out, permission.getUserAction(), PosixFilePermission.OWNER_READ,
        PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE);
    add(out, permission.getGroupAction(), PosixFilePermission.GROUP_READ,
        PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE);
    add(out, permission.getOtherAction(), PosixFilePermission.OTHERS_READ,
        PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE);
    return out;
  }

  private static void add(Set<PosixFilePermission> out, FsAction action, PosixFilePermission r,
                          PosixFilePermission w, PosixFilePermission x) {
    if (action.implies(FsAction.READ)) out.add(r);
    if (action.implies(FsAction.WRITE)) out.add(w);
    if (action.implies(FsAction.EXECUTE)) out.add(x);
  }
}
