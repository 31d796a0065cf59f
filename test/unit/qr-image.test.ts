import jsQR from 'jsqr';
import { PNG } from 'pngjs';
import { renderQrPng, renderQrSvg } from '../../src/modules/deposits/qr-image.js';

// USDT on Ethereum mainnet, 9.323201 USDT (6 decimals) to a deposit address.
const EIP681 = 'ethereum:0xdAC17F958D2ee523a2206206994597C13D831ec7@1/transfer?address=0x8ba1f109551bD432803012645Ac136ddd64DBA72&uint256=9323201';

function decodePng(png: Buffer): string | undefined {
  const img = PNG.sync.read(png);
  const code = jsQR(new Uint8ClampedArray(img.data.buffer, img.data.byteOffset, img.data.length), img.width, img.height);
  return code?.data;
}

describe('renderQrPng', () => {
  it('renders a PNG that decodes back to the exact EIP-681 string', async () => {
    const png = await renderQrPng(EIP681);
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    const img = PNG.sync.read(png);
    expect(img.width).toBe(512);
    expect(img.height).toBe(512);
    expect(decodePng(png)).toBe(EIP681);
  });

  it('honours width and still decodes an 18-decimal amount', async () => {
    const value = EIP681.replace('uint256=9323201', 'uint256=9323201000000000000');
    const png = await renderQrPng(value, { width: 300 });
    expect(PNG.sync.read(png).width).toBe(300);
    expect(decodePng(png)).toBe(value);
  });

  it('rejects an empty value', async () => {
    await expect(renderQrPng('')).rejects.toThrow();
  });
});

describe('renderQrSvg', () => {
  it('returns an SVG document', async () => {
    const svg = await renderQrSvg(EIP681);
    expect(svg).toContain('<svg');
    expect(svg).toContain('</svg>');
    expect(svg).toContain('width="512"');
  });
});
