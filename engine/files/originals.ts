// Original bytes of uploaded files, kept beside the log so an item can be extracted again later:
// DATA_DIR/files/<kbId>/<contentId>. Names are engine ids (checked), never client file names.
import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncPath } from '../fsync';

const SAFE_ID = /^[a-z]{2,4}_[0-9a-f]{28}$/;

function safe(id: string): string {
  if (!SAFE_ID.test(id)) throw new Error(`not an engine id: ${JSON.stringify(id)}`);
  return id;
}

export class OriginalsStore {
  constructor(readonly root: string) {}

  pathOf(kbId: string, contentId: string): string {
    return join(this.root, safe(kbId), safe(contentId));
  }

  /** Move a finished temporary file into place, durably (file and directory entry fsynced). */
  async adopt(tempPath: string, kbId: string, contentId: string): Promise<void> {
    const dir = join(this.root, safe(kbId));
    await mkdir(dir, { recursive: true });
    fsyncPath(tempPath);
    await rename(tempPath, this.pathOf(kbId, contentId));
    fsyncPath(dir);
  }

  async remove(kbId: string, contentId: string): Promise<void> {
    await rm(this.pathOf(kbId, contentId), { force: true });
  }

  async removeKnowledgeBase(kbId: string): Promise<void> {
    await rm(join(this.root, safe(kbId)), { recursive: true, force: true });
  }
}
