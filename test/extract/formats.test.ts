import { describe, expect, test } from 'bun:test';
import { extractFile, type ExtractOptions } from '../../engine/extract';
import { chunkText } from '../../engine/chunking/chunker';
import { processContent } from '../../engine/ingest/process';
import { enc, sampleDocx, textPdf, utf16 } from './fixtures';

const OPTS: ExtractOptions = { allowImages: false, maxPages: 100, maxChars: 1_000_000 };

describe('plain text and Markdown', () => {
  test('UTF-8 with CRLF line ends', async () => {
    const r = await extractFile(enc('Line one\r\nLine two\r\n'), 'a.txt', OPTS);
    expect(r).toEqual({ mediaType: 'text/plain', text: 'Line one\nLine two' });
  });

  test('UTF-16 LE and BE with a byte-order mark', async () => {
    const text = 'Grüße aus Köln — 東京';
    expect((await extractFile(utf16(text, 'le'), 'a.txt', OPTS)).text).toBe(text);
    expect((await extractFile(utf16(text, 'be'), 'a.txt', OPTS)).text).toBe(text);
  });

  test('Markdown headings stay on their own lines and chunks break at them', async () => {
    const md = '# Refunds\n\nRefunds take 14 days to process for all orders.\n\n## Exceptions\n\nGift cards are never refunded.\n';
    const r = await extractFile(enc(md), 'policy.md', OPTS);
    expect(r.mediaType).toBe('text/markdown');
    expect(r.text).toBe(md.trim());
    const chunks = chunkText(r.text, { size: 70, overlap: 0 }).map((s) => r.text.slice(s.start, s.end));
    expect(chunks.some((c) => c.startsWith('## Exceptions'))).toBe(true);
  });
});

describe('HTML', () => {
  const page = `<!doctype html><html><head><title>Help centre</title>
    <style>.banner { color: red }</style><script>window.secretToken = "abc";</script></head>
    <body>
      <nav><a href="/">Home</a> <a href="/pricing">Pricing</a></nav>
      <header role="banner"><div role="navigation">Skip to menu</div></header>
      <main>
        <h1>Refund   policy</h1>
        <p>Refunds are <b>issued</b> within&nbsp;14 days.<br>Contact billing first.</p>
        <h2>Steps</h2>
        <ol><li>Open the order</li><li>Press <em>Refund</em><ul><li>Pick a reason</li></ul></li></ol>
        <table><caption>Fees</caption><thead><tr><th>Plan</th><th>Fee</th></tr></thead>
          <tbody><tr><td>Basic</td><td>2 EUR</td></tr><tr><td>Pro</td><td>0 EUR</td></tr></tbody></table>
        <div hidden>Hidden promo</div><p style="display: none">Invisible</p>
        <noscript>Please enable JavaScript</noscript>
        <form><label>Email</label><input value="typed"><button>Send</button></form>
      </main>
      <script>trackPageView();</script>
    </body></html>`;

  test('drops scripts, styles, navigation and hidden parts; keeps headings, lists and tables', async () => {
    const { text, mediaType } = await extractFile(enc(page), 'help.html', OPTS);
    expect(mediaType).toBe('text/html');
    for (const noise of [
      'secretToken',
      'color',
      'Home',
      'Pricing',
      'Skip to menu',
      'Hidden promo',
      'Invisible',
      'enable JavaScript',
      'trackPageView',
      'Send',
      'typed',
    ]) {
      expect(text).not.toContain(noise);
    }
    expect(text).toBe(
      [
        '# Refund policy',
        '',
        'Refunds are issued within 14 days.',
        'Contact billing first.',
        '',
        '## Steps',
        '',
        '1. Open the order',
        '2. Press Refund',
        '  - Pick a reason',
        '',
        'Fees',
        'Plan | Fee',
        'Basic | 2 EUR',
        'Pro | 0 EUR',
        '',
        'Email',
      ].join('\n'),
    );
  });

  test('the title stands in for a missing h1', async () => {
    const r = await extractFile(enc('<html><head><title>Onboarding</title></head><body><p>Welcome aboard.</p></body></html>'), 'a.html', OPTS);
    expect(r.text).toBe('# Onboarding\n\nWelcome aboard.');
  });
});

describe('CSV', () => {
  test('one row per line, every value labelled with its header', async () => {
    const csv = 'Name,City,Note\r\nAlice,Berlin,"likes, commas"\r\nBob,,"said ""hi"""\r\n\r\n';
    const r = await extractFile(enc(csv), 'people.csv', OPTS);
    expect(r).toEqual({ mediaType: 'text/csv', text: 'Name: Alice | City: Berlin | Note: likes, commas\nName: Bob | Note: said "hi"' });
  });

  test('semicolons and tabs as delimiters', async () => {
    expect((await extractFile(enc('a;b\n1;2\n'), 'x.csv', OPTS)).text).toBe('a: 1 | b: 2');
    expect((await extractFile(enc('a\tb\n1\t2\n'), 'x.tsv', OPTS)).text).toBe('a: 1 | b: 2');
  });
});

describe('JSON', () => {
  test('keys and values as key.path lines, one block per top-level record', async () => {
    const json = {
      title: 'Handbook',
      version: 3,
      draft: false,
      owner: null,
      tags: ['hr', 'policy'],
      sections: [{ name: 'Leave', days: 25 }, { name: 'Travel' }],
    };
    const r = await extractFile(enc(JSON.stringify(json)), 'handbook.json', OPTS);
    expect(r.mediaType).toBe('application/json');
    expect(r.text).toBe(
      'title: Handbook\nversion: 3\ndraft: false\n\ntags[0]: hr\ntags[1]: policy\n\nsections[0].name: Leave\nsections[0].days: 25\nsections[1].name: Travel',
    );
  });

  test('a top-level array makes one block per element', async () => {
    const r = await extractFile(enc('[{"q":"How?","a":"Like this."},{"q":"Why?"}]'), 'faq.json', OPTS);
    expect(r.text).toBe('[0].q: How?\n[0].a: Like this.\n\n[1].q: Why?');
  });
});

describe('DOCX', () => {
  test('headings, paragraphs, a list and a table', async () => {
    const r = await extractFile(await sampleDocx(), 'travel.docx', OPTS);
    expect(r.mediaType).toBe('application/vnd.openxmlformats-officedocument.wordprocessingml.document');
    expect(r.text).toBe(
      [
        '# Travel Policy',
        '',
        'Employees book flights through the travel portal.',
        '',
        'Receipts are uploaded within thirty days.',
        '',
        '## Per diem rates',
        '',
        '- Meals are covered at the local rate.',
        '',
        'City | Rate',
        'Berlin | 45 EUR',
        'Lisbon | 38 EUR',
      ].join('\n'),
    );
  });
});

describe('PDF', () => {
  const pages = [
    [['Quarterly report'], ['Revenue grew in the first quarter.', 'Costs stayed flat.']],
    [['Hiring plan for engineering.']],
    [],
    [['Appendix with the glossary.']],
  ];

  test('text per page with the start offset of every page', async () => {
    const r = await extractFile(await textPdf(pages), 'report.pdf', OPTS);
    expect(r.mediaType).toBe('application/pdf');
    expect(r.pageCount).toBe(4);
    expect(r.text).toBe(
      'Quarterly report\n\nRevenue grew in the first quarter.\nCosts stayed flat.\n\nHiring plan for engineering.\n\nAppendix with the glossary.',
    );
    const p = r.pages!;
    expect(p).toHaveLength(4);
    expect(r.text.slice(p[0]!)).toStartWith('Quarterly report');
    expect(r.text.slice(p[1]!)).toStartWith('Hiring plan');
    expect(r.text.slice(p[3]!)).toStartWith('Appendix');
    expect(p[2]).toBeLessThanOrEqual(p[3]!); // the blank page 3 sits between its neighbours
  });

  test('every chunk knows its page', async () => {
    const r = await extractFile(await textPdf(pages), 'report.pdf', OPTS);
    const chunks = processContent({ text: r.text, chunking: { size: 40, overlap: 0 }, pages: r.pages });
    expect(chunks.length).toBeGreaterThanOrEqual(4);
    const pageOf = (word: string) => chunks.find((c) => r.text.slice(c.start, c.end).includes(word))?.page;
    expect(pageOf('Quarterly')).toBe(1);
    expect(pageOf('Costs')).toBe(1);
    expect(pageOf('Hiring')).toBe(2);
    expect(pageOf('Appendix')).toBe(4);
  });

  test('more pages than maxPages, or more text than maxChars, is refused', async () => {
    const pdf = await textPdf(pages);
    await expect(extractFile(pdf, 'r.pdf', { ...OPTS, maxPages: 3 })).rejects.toMatchObject({
      code: 'TOO_LARGE',
      message: 'The PDF has 4 pages; at most 3 are accepted.',
    });
    await expect(extractFile(pdf, 'r.pdf', { ...OPTS, maxChars: 50 })).rejects.toMatchObject({ code: 'TOO_LARGE' });
  });

  test('the character cap applies to every format', async () => {
    await expect(extractFile(enc('x'.repeat(101)), 'a.txt', { ...OPTS, maxChars: 100 })).rejects.toMatchObject({ code: 'TOO_LARGE' });
    await expect(extractFile(enc(JSON.stringify({ a: 'x'.repeat(200) })), 'a.json', { ...OPTS, maxChars: 100 })).rejects.toMatchObject({ code: 'TOO_LARGE' });
    expect((await extractFile(enc('x'.repeat(100)), 'a.txt', { ...OPTS, maxChars: 100 })).text).toHaveLength(100);
  });
});
