/**
 * QR images for payment URIs (EIP-681, wallet deep links, Solana Pay). Error correction M (~15 %)
 * is the usual trade-off for on-screen codes: long URIs stay at a scannable module size while
 * surviving glare or a partly covered screen. Margin 4 is the quiet zone the QR standard requires.
 */
import QRCode from 'qrcode';

export interface QrRenderOptions {
  /** Image width in pixels (PNG) / viewBox-scaled width (SVG). Default 512: crisp on phones and print. */
  width?: number;
  /** Quiet zone in modules. Default 4 (the QR spec minimum). */
  margin?: number;
}

const DEFAULTS = { width: 512, margin: 4 } as const;

function checkValue(value: string): void {
  // An empty QR scans as nothing useful; callers always have a URI to encode.
  if (typeof value !== 'string' || value.length === 0) throw new Error('QR value must be a non-empty string');
}

/** The same symbol for both formats: error correction M, size and quiet zone from the options. */
function renderOptions(options: QrRenderOptions) {
  return { errorCorrectionLevel: 'M' as const, width: options.width ?? DEFAULTS.width, margin: options.margin ?? DEFAULTS.margin };
}

export async function renderQrPng(value: string, options: QrRenderOptions = {}): Promise<Buffer> {
  checkValue(value);
  return QRCode.toBuffer(value, { type: 'png', ...renderOptions(options) });
}

export async function renderQrSvg(value: string, options: QrRenderOptions = {}): Promise<string> {
  checkValue(value);
  return QRCode.toString(value, { type: 'svg', ...renderOptions(options) });
}
