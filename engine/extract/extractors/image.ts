// Images (PNG, JPEG, WebP, TIFF): their size is read from the header first (image-size) so a
// decompression bomb is refused before anything decodes it; then OCR reads the text. A photo whose
// EXIF orientation says it is stored rotated (phones do this) is turned upright first with
// @napi-rs/canvas, which applies the orientation when decoding; tesseract would not.
import { imageSize } from 'image-size';
import { ExtractionError, asExtractionFailure, formatCount, reasonOf } from '../errors';
import { recognize } from './ocr';

const damaged = (detail: string) => new ExtractionError('EXTRACTION_FAILED', 'The image could not be read; it may be damaged.', detail);

export function checkImageSize(bytes: Uint8Array, maxPixels: number): { width: number; height: number; orientation?: number } {
  let size: { width?: number; height?: number; orientation?: number };
  try {
    size = imageSize(bytes);
  } catch (err) {
    throw damaged(reasonOf(err));
  }
  const width = size.width ?? 0;
  const height = size.height ?? 0;
  if (width <= 0 || height <= 0) throw damaged('no dimensions');
  if (width * height > maxPixels) {
    throw new ExtractionError(
      'TOO_LARGE',
      `The image is ${formatCount(width)} × ${formatCount(height)} pixels; text is read from images of at most ${formatCount(maxPixels)} pixels.`,
    );
  }
  return { width, height, ...(size.orientation ? { orientation: size.orientation } : {}) };
}

/** The image re-encoded as PNG with its EXIF orientation applied. */
async function upright(bytes: Uint8Array): Promise<Uint8Array> {
  const { createCanvas, loadImage } = await import('@napi-rs/canvas');
  const image = await loadImage(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  const canvas = createCanvas(image.width, image.height);
  canvas.getContext('2d').drawImage(image, 0, 0);
  return new Uint8Array(await canvas.encode('png'));
}

export async function imageText(bytes: Uint8Array, mediaType: string, maxPixels: number): Promise<string> {
  const { orientation } = checkImageSize(bytes, maxPixels);
  try {
    const rotated = orientation !== undefined && orientation > 1 && mediaType !== 'image/tiff';
    return (await recognize(rotated ? await upright(bytes) : bytes)).trim();
  } catch (err) {
    throw asExtractionFailure(err, 'Text could not be read from the image; it may be damaged.');
  }
}
