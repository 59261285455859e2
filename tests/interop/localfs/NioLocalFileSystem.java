package medallion.interop;

import org.apache.hadoop.fs.LocalFileSystem;

/** The file: FileSystem (fs.file.impl): Hadoop's checksummed LocalFileSystem over
 * NioRawLocalFileSystem. */
public class NioLocalFileSystem extends LocalFileSystem {
  public NioLocalFileSystem() {
    super(new NioRawLocalFileSystem());
  }
}
