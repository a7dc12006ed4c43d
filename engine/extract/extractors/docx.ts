// DOCX → text: the zip guard first, then mammoth converts the document to HTML (headings from
// Word's heading/title styles, lists, tables), which the HTML extractor turns into structured text.
// Images are not read (mammoth is given an image converter that never touches their bytes), and
// external files linked from the document are never opened.
import { ExtractionError, asExtractionFailure, reasonOf } from '../errors';
import { htmlToText } from './html';
import { DOCX_ZIP_LIMITS, guardZip } from './zip-guard';

const STYLE_MAP = [
  "p[style-name='Title'] => h1:fresh",
  "p[style-name='Subtitle'] => h2:fresh",
  "p[style-name='title'] => h1:fresh",
  "p[style-name='subtitle'] => h2:fresh",
];

/** The parts mammoth reads: XML and relationship files (not media). */
const isConvertedPart = (name: string) => /\.(xml|rels)$/i.test(name);

export async function extractDocx(bytes: Uint8Array, maxXmlBytes: number): Promise<string> {
  await guardZip(bytes, { ...DOCX_ZIP_LIMITS, maxConvertedBytes: maxXmlBytes }, isConvertedPart);
  const mammoth = (await import('mammoth')).default;
  let html: string;
  try {
    const result = await mammoth.convertToHtml(
      { buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) },
      {
        styleMap: STYLE_MAP,
        convertImage: mammoth.images.imgElement(async () => ({ src: '' })),
        externalFileAccess: false,
      },
    );
    html = result.value;
  } catch (err) {
    throw new ExtractionError('EXTRACTION_FAILED', 'The Word document could not be read; it may be damaged.', reasonOf(err));
  }
  try {
    return htmlToText(html);
  } catch (err) {
    throw asExtractionFailure(err, 'The Word document could not be read; it may be damaged.');
  }
}
