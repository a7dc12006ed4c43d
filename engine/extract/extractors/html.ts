// HTML → text with structure: headings become `#` lines, paragraphs and other blocks are separated
// by blank lines, list items are `- ` / `1. ` lines, table rows are `cell | cell` lines. Scripts,
// styles, navigation, forms' controls and hidden elements are dropped. Parsing is htmlparser2's.
import { isTag as isTagNode, isText as isTextNode } from 'domhandler';
import { DomUtils, parseDocument } from 'htmlparser2';
import { decodeText, type TextEncoding } from '../text';

type HtmlDocument = ReturnType<typeof parseDocument>;
type HtmlNode = HtmlDocument['children'][number];
type HtmlElement = Extract<HtmlNode, { attribs: Record<string, string> }>;
const isTag = (node: HtmlNode): node is HtmlElement => isTagNode(node);

/** Elements whose content is never text of the page. */
const SKIP = new Set([
  'head',
  'script',
  'style',
  'noscript',
  'template',
  'nav',
  'iframe',
  'frame',
  'frameset',
  'object',
  'embed',
  'applet',
  'svg',
  'math',
  'canvas',
  'button',
  'select',
  'option',
  'optgroup',
  'datalist',
  'textarea',
  'input',
  'audio',
  'video',
  'source',
  'track',
  'map',
  'img',
  'picture',
]);
const SKIP_ROLES = new Set(['navigation', 'search', 'menu', 'menubar', 'toolbar']);
const BLOCKS = new Set([
  'p',
  'div',
  'section',
  'article',
  'main',
  'header',
  'footer',
  'aside',
  'blockquote',
  'figure',
  'figcaption',
  'address',
  'details',
  'summary',
  'form',
  'fieldset',
  'legend',
  'dl',
  'dt',
  'dd',
  'hr',
  'center',
  'body',
  'html',
  'caption',
  'hgroup',
  'dialog',
  'search',
]);
const INDENT = '\u0001'; // survives line trimming, becomes two spaces at the end

function isHidden(el: HtmlElement): boolean {
  const a = el.attribs;
  if ('hidden' in a) return true;
  if (a['aria-hidden'] === 'true') return true;
  if (a.role && SKIP_ROLES.has(a.role.toLowerCase())) return true;
  const style = a.style?.toLowerCase().replace(/\s+/g, '');
  return style !== undefined && (style.includes('display:none') || style.includes('visibility:hidden'));
}

interface Ctx {
  pre: boolean;
  /** Inside a list item or table cell: block breaks become single line breaks. */
  tight: boolean;
  depth: number;
}

class Writer {
  readonly parts: string[] = [];
  text(s: string): void {
    this.parts.push(s);
  }
  block(ctx: Ctx): void {
    this.parts.push(ctx.tight ? '\n' : '\n\n');
  }
}

function renderChildren(nodes: HtmlNode[], out: Writer, ctx: Ctx): void {
  for (const node of nodes) render(node, out, ctx);
}

/** The element's text on one line (for headings and table cells). */
function inlineText(nodes: HtmlNode[], ctx: Ctx): string {
  const w = new Writer();
  renderChildren(nodes, w, { ...ctx, tight: true });
  return w.parts.join('').replaceAll(INDENT, '').replace(/\s+/g, ' ').trim();
}

function renderList(el: HtmlElement, out: Writer, ctx: Ctx): void {
  const ordered = el.name === 'ol';
  let n = Number.parseInt(el.attribs.start ?? '1', 10);
  if (!Number.isFinite(n)) n = 1;
  if (ctx.depth === 0) out.block(ctx);
  for (const child of el.children) {
    if (isTag(child) && child.name === 'li' && !isHidden(child)) {
      const marker = ordered ? `${n++}. ` : '- ';
      out.text(`\n${INDENT.repeat(ctx.depth)}${marker}`);
      renderChildren(child.children, out, { ...ctx, tight: true, depth: ctx.depth + 1 });
    } else {
      render(child, out, { ...ctx, depth: ctx.depth + 1 });
    }
  }
  if (ctx.depth === 0) out.block(ctx);
  else out.text('\n');
}

function tableRows(table: HtmlElement): HtmlElement[] {
  const rows: HtmlElement[] = [];
  const walk = (el: HtmlElement) => {
    for (const child of el.children) {
      if (!isTag(child) || isHidden(child)) continue;
      if (child.name === 'tr') rows.push(child);
      else if (child.name === 'thead' || child.name === 'tbody' || child.name === 'tfoot') walk(child);
    }
  };
  walk(table);
  return rows;
}

function renderTable(table: HtmlElement, out: Writer, ctx: Ctx): void {
  out.block(ctx);
  const caption = table.children.find((c): c is HtmlElement => isTag(c) && c.name === 'caption');
  if (caption) out.text(`${inlineText(caption.children, ctx)}\n`);
  for (const row of tableRows(table)) {
    const cells = row.children
      .filter((c): c is HtmlElement => isTag(c) && (c.name === 'td' || c.name === 'th') && !isHidden(c))
      .map((c) => inlineText(c.children, ctx))
      .filter((c) => c.length > 0);
    if (cells.length > 0) out.text(`${cells.join(' | ')}\n`);
  }
  out.block(ctx);
}

function render(node: HtmlNode, out: Writer, ctx: Ctx): void {
  if (isTextNode(node)) {
    out.text(ctx.pre ? node.data : node.data.replace(/\s+/g, ' '));
    return;
  }
  if (!isTag(node)) {
    // Document/CDATA nodes hold content; comments and directives do not.
    if ('children' in node) renderChildren(node.children as HtmlNode[], out, ctx);
    return;
  }
  const name = node.name.toLowerCase();
  if (SKIP.has(name) || isHidden(node)) return;
  const heading = /^h([1-6])$/.exec(name);
  if (heading) {
    const text = inlineText(node.children, ctx);
    if (text) {
      if (ctx.tight) out.text(` ${text} `);
      else out.text(`\n\n${'#'.repeat(Number(heading[1]))} ${text}\n\n`);
    }
    return;
  }
  switch (name) {
    case 'br':
      out.text('\n');
      return;
    case 'ul':
    case 'ol':
    case 'menu':
      renderList(node, out, ctx);
      return;
    case 'table':
      renderTable(node, out, ctx);
      return;
    case 'pre':
      out.block(ctx);
      renderChildren(node.children, out, { ...ctx, pre: true });
      out.block(ctx);
      return;
    case 'li':
      out.text('\n- ');
      renderChildren(node.children, out, { ...ctx, tight: true });
      out.text('\n');
      return;
    case 'td':
    case 'th':
      out.text(' ');
      renderChildren(node.children, out, ctx);
      out.text(' ');
      return;
    case 'tr':
      out.text('\n');
      renderChildren(node.children, out, ctx);
      out.text('\n');
      return;
  }
  if (BLOCKS.has(name)) {
    out.block(ctx);
    renderChildren(node.children, out, ctx);
    out.block(ctx);
    return;
  }
  renderChildren(node.children, out, ctx);
}

function tidy(raw: string): string {
  return raw
    .split('\n')
    .map((line) =>
      line
        .replace(/[ \t\u00a0]+/g, ' ')
        .trim()
        .replaceAll(INDENT, '  '),
    )
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** Text of an HTML document (see the file comment for the shape). */
export function htmlToText(html: string): string {
  const doc = parseDocument(html, { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true });
  const out = new Writer();
  const hasH1 = DomUtils.findOne((el) => el.name === 'h1', doc.children, true) !== null;
  if (!hasH1) {
    const title = DomUtils.findOne((el) => el.name === 'title', doc.children, true);
    const text = title ? DomUtils.textContent(title).replace(/\s+/g, ' ').trim() : '';
    if (text) out.text(`# ${text}\n\n`);
  }
  renderChildren(doc.children, out, { pre: false, tight: false, depth: 0 });
  return tidy(out.parts.join(''));
}

/** The charset an HTML file declares in a `<meta>` tag within its first 2 KB, if any. */
function declaredCharset(bytes: Uint8Array): string | undefined {
  const head = new TextDecoder('windows-1252').decode(bytes.subarray(0, 2048));
  const m = /<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)/i.exec(head);
  return m?.[1];
}

/** Decodes an HTML file's bytes: BOM / UTF-8 as sniffed, else the `<meta>` charset if valid. */
export function decodeHtml(bytes: Uint8Array, encoding: TextEncoding): string {
  if (encoding === 'windows-1252') {
    const label = declaredCharset(bytes);
    if (label) {
      try {
        return new TextDecoder(label as ConstructorParameters<typeof TextDecoder>[0]).decode(bytes).replace(/\r\n?/g, '\n');
      } catch {
        // unknown label: fall back to Windows-1252
      }
    }
  }
  return decodeText(bytes, encoding);
}
