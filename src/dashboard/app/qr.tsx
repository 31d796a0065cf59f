import { toString as qrSvg } from 'qrcode';
import { useEffect, useState } from 'preact/hooks';

/** A QR code of `text`, drawn here as SVG (an image from data:, which the page's CSP allows; nothing leaves the browser). */
export function Qr({ text, id, label }: { text: string; id?: string; label: string }) {
  const [src, setSrc] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    void qrSvg(text, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 }).then(
      (svg) => live && setSrc(`data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`),
    );
    return () => {
      live = false;
    };
  }, [text]);
  return src ? <img class="qr" id={id} src={src} alt={label} width={180} height={180} /> : null;
}
