// The evidence a merchant wrote, as the one defense document Adyen's Disputes API takes for it: Adyen
// accepts PDF, JPEG or TIFF only, so the text fields become a plain PDF (Helvetica, uncompressed) with one
// line per field, `field: text`, wrapped to the page.

import { DISPUTE_EVIDENCE_FIELDS, type DisputeEvidence } from '../../../lib/providers/disputes';

const LINES_PER_PAGE = 60;
const LINE_WIDTH = 95;

/** The evidence as a PDF's bytes (ASCII: a character the standard font has no code for becomes `?`). */
export function defenseDocumentPdf(evidence: DisputeEvidence): Buffer {
  const lines = ['Dispute evidence', '', ...DISPUTE_EVIDENCE_FIELDS.flatMap((field) => {
    const text = evidence[field];
    return typeof text === 'string' && text.trim() !== '' ? [...wrapped(`${field}: ${text}`), ''] : [];
  })];
  const pages: string[][] = [];
  for (let at = 0; at < lines.length; at += LINES_PER_PAGE) pages.push(lines.slice(at, at + LINES_PER_PAGE));
  // Objects: 1 catalog, 2 page tree, 3 font, then each page and its content stream.
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${pages.map((_, i) => `${4 + i * 2} 0 R`).join(' ')}] /Count ${pages.length} >>`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  for (const [i, page] of pages.entries()) {
    const stream = `BT /F1 10 Tf 12 TL 50 800 Td ${page.map((line) => `(${escaped(line)}) Tj T*`).join(' ')} ET`;
    objects.push(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + i * 2} 0 R >>`);
    objects.push(`<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`);
  }
  let pdf = '%PDF-1.4\n';
  const offsets = objects.map((body, i) => {
    const offset = pdf.length;
    pdf += `${i + 1} 0 obj\n${body}\nendobj\n`;
    return offset;
  });
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('')}`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1');
}

/** A field's text in lines of at most LINE_WIDTH characters, broken between words where it can. */
function wrapped(text: string): string[] {
  const lines: string[] = [];
  for (const paragraph of text.replace(/[^\x20-\x7e\n]/g, '?').split('\n')) {
    let line = '';
    for (const word of paragraph.split(' ')) {
      for (let rest = word; ; ) {
        const next = line ? `${line} ${rest}` : rest;
        if (next.length <= LINE_WIDTH) { line = next; break; }
        if (line) { lines.push(line); line = ''; continue; }
        lines.push(rest.slice(0, LINE_WIDTH));
        rest = rest.slice(LINE_WIDTH);
      }
    }
    lines.push(line);
  }
  return lines;
}

/** A PDF literal string's text: backslash and parentheses escaped. */
function escaped(line: string): string {
  return line.replace(/[\\()]/g, (c) => `\\${c}`);
}
