// The playground: a page over the public API only (the same calls any client makes), with the
// organization's key kept in this tab's sessionStorage. No framework, no CDN: served by the
// server itself (src/routes/playground.ts) so it works offline.
const API = '/api/v1';
const MODES = ['full-text', 'semantic', 'hybrid'];
const $ = (id) => document.getElementById(id);

const session = {
  get org() {
    return sessionStorage.getItem('kb-org') ?? '';
  },
  get key() {
    return sessionStorage.getItem('kb-key') ?? '';
  },
  save(org, key) {
    sessionStorage.setItem('kb-org', org);
    sessionStorage.setItem('kb-key', key);
  },
};

function authHeaders() {
  return { 'x-service-organization-id': session.org, 'x-service-api-key': session.key };
}

/** Calls the API; resolves with `data` or throws the envelope's message. */
async function api(method, path, body) {
  const res = await fetch(API + path, {
    method,
    headers: { ...authHeaders(), ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json().catch(() => ({}));
  if (!res.ok || json.success === false) {
    if (!json.error) throw new Error(`HTTP ${res.status}`);
    // The details say where and why (a filter's path: /metadataFilter/year/$gte).
    const details = (json.error.details ?? []).map((d) => `${d.path}: ${d.message}`).join('; ');
    throw new Error(`${json.error.code}: ${json.error.message}${details ? ` (${details})` : ''}`);
  }
  return json;
}

function setStatus(el, text, isError = false) {
  el.textContent = text;
  el.classList.toggle('error', isError);
}

// --- organization and knowledge bases -----------------------------------------------------------

async function connect() {
  if (!$('org').value.trim() || !$('key').value) {
    setStatus($('connection-status'), 'Enter both the organization id and its API key.', true);
    return;
  }
  session.save($('org').value.trim(), $('key').value);
  try {
    await loadKnowledgeBases();
    setStatus($('connection-status'), `Connected as ${session.org}`);
  } catch (err) {
    setStatus($('connection-status'), err.message, true);
  }
}

async function loadKnowledgeBases(select) {
  const { data } = await api('GET', '/knowledge-bases?limit=100');
  const kbSelect = $('kb');
  kbSelect.replaceChildren(...data.map((kb) => new Option(`${kb.name} (${kb.id})`, kb.id)));
  if (select) kbSelect.value = select;
  else if (sessionStorage.getItem('kb-id') && data.some((kb) => kb.id === sessionStorage.getItem('kb-id'))) kbSelect.value = sessionStorage.getItem('kb-id');
  await selectKnowledgeBase();
}

async function createKnowledgeBase() {
  try {
    const name = $('new-kb-name').value.trim();
    const { data } = await api('POST', '/knowledge-bases', { name, type: $('new-kb-type').value });
    $('new-kb-name').value = '';
    await loadKnowledgeBases(data.id);
  } catch (err) {
    setStatus($('ingestion'), err.message, true);
  }
}

let progressTimer;

async function selectKnowledgeBase() {
  sessionStorage.setItem('kb-id', $('kb').value);
  clearTimeout(progressTimer);
  await Promise.all([showModel(), showIngestion()]);
}

/** The type and embedding model of the knowledge base, fixed at its creation (its configuration). */
async function showModel() {
  const kbId = $('kb').value;
  const el = $('kb-model');
  if (!kbId) return setStatus(el, '');
  try {
    const { data } = await api('GET', `/knowledge-bases/${kbId}/configuration`);
    const { model, dimensions, precision, quantization } = data.embedding;
    const details = [precision, `${dimensions} dimensions`, `${quantization} vectors`].filter(Boolean).join(', ');
    setStatus(el, `${data.type}: model ${model} (${details})${data.warning ? ` — ${data.warning}` : ''}`, Boolean(data.warning));
    el.dataset.model = model;
  } catch (err) {
    setStatus(el, err.message, true);
  }
}

/** The knowledge base's ingestion progress, polled while anything is waiting. */
async function showIngestion() {
  const kbId = $('kb').value;
  if (!kbId) return setStatus($('ingestion'), 'No knowledge base yet: create one.');
  try {
    const { data } = await api('GET', `/knowledge-bases/${kbId}`);
    const { contents, chunksWaiting, chunksPerSecond, etaSeconds } = data.ingestion;
    const busy = contents.pending + contents.processing > 0;
    const pace = busy ? `, ${chunksWaiting} chunks waiting, ${chunksPerSecond.toFixed(1)} chunks/s, about ${Math.ceil(etaSeconds)} s left` : '';
    setStatus($('ingestion'), `${contents.ready} ready, ${contents.pending + contents.processing} indexing, ${contents.failed} failed${pace}`);
    $('ingestion').dataset.idle = String(!busy);
    if (busy) progressTimer = setTimeout(showIngestion, 500);
  } catch (err) {
    setStatus($('ingestion'), err.message, true);
  }
}

// --- uploads ------------------------------------------------------------------------------------

/** One file through the multipart route, reporting upload progress (fetch cannot). */
function uploadFile(kbId, file, metadata, onProgress) {
  return new Promise((resolve, reject) => {
    const form = new FormData();
    form.append('file', file, file.name);
    if (metadata) form.append('metadata', metadata);
    const xhr = new XMLHttpRequest();
    xhr.open('POST', `${API}/knowledge-bases/${kbId}/contents/file`);
    for (const [name, value] of Object.entries(authHeaders())) xhr.setRequestHeader(name, value);
    xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
    xhr.onerror = () => reject(new Error('network error'));
    xhr.onload = () => {
      let json = {};
      try {
        json = JSON.parse(xhr.responseText);
      } catch {}
      if (xhr.status >= 200 && xhr.status < 300) resolve(json.data);
      else reject(new Error(json.error ? `${json.error.code}: ${json.error.message}` : `HTTP ${xhr.status}`));
    };
    xhr.send(form);
  });
}

async function uploadSelected() {
  const kbId = $('kb').value;
  const files = [...$('files').files];
  const log = $('upload-log');
  if (!kbId || files.length === 0) return;
  const metadata = $('upload-metadata').value.trim() || undefined;
  const bar = $('upload-progress');
  const total = files.reduce((n, f) => n + f.size, 0) || 1;
  let done = 0;
  for (const file of files) {
    const item = document.createElement('li');
    item.textContent = `${file.name}: uploading…`;
    log.append(item);
    try {
      const content = await uploadFile(kbId, file, metadata, (share) => (bar.value = (done + share * file.size) / total));
      item.textContent = `${file.name}: accepted as ${content.id}`;
    } catch (err) {
      item.textContent = `${file.name}: ${err.message}`;
      item.classList.add('error');
    }
    done += file.size;
    bar.value = done / total;
  }
  await showIngestion();
}

// --- search -------------------------------------------------------------------------------------

function addFilterRow(key = '', value = '') {
  const row = document.createElement('span');
  row.className = 'filter-row';
  const k = Object.assign(document.createElement('input'), { placeholder: 'key', value: key, className: 'filter-key' });
  const v = Object.assign(document.createElement('input'), { placeholder: 'value', value, className: 'filter-value' });
  const remove = Object.assign(document.createElement('button'), { type: 'button', textContent: '×', title: 'Remove' });
  remove.onclick = () => row.remove();
  row.append(k, document.createTextNode('='), v, remove);
  $('filter-rows').append(row);
}

function parseJson(text, what) {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`${what}: not valid JSON (${err.message})`);
  }
}

/** A row's value: JSON when it begins with { or [ (an operator object or a list), else a number, a boolean or text. */
function rowValue(key, raw) {
  if (raw.startsWith('{') || raw.startsWith('[')) return parseJson(raw, `the value of ${key}`);
  return raw === 'true' ? true : raw === 'false' ? false : raw !== '' && !Number.isNaN(Number(raw)) ? Number(raw) : raw;
}

/**
 * The metadataFilter of the rows and the JSON field, all of which must hold: the rows as one object
 * (a key given twice as a separate condition), the JSON filter as it is, several under $and (as the
 * CLI's --filter). Throws, saying what is wrong, when JSON does not parse.
 */
function metadataFilter() {
  const pairs = {};
  const all = [];
  for (const row of document.querySelectorAll('.filter-row')) {
    const key = row.querySelector('.filter-key').value.trim();
    if (!key) continue;
    const value = rowValue(key, row.querySelector('.filter-value').value.trim());
    if (Object.hasOwn(pairs, key)) all.push({ [key]: value });
    else pairs[key] = value;
  }
  const json = $('filter-json').value.trim();
  if (json) {
    const filter = parseJson(json, 'the JSON filter');
    if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) throw new Error('the JSON filter must be an object: {"key": condition, …}');
    all.push(filter);
  }
  if (Object.keys(pairs).length > 0) all.unshift(pairs);
  return all.length === 0 ? undefined : all.length === 1 ? all[0] : { $and: all };
}

/** A number field's value, or undefined when it is empty. */
function optionalNumber(id) {
  const raw = $(id).value.trim();
  return raw === '' ? undefined : Number(raw);
}

function searchBody(mode, filter) {
  // Highlights: each hit shows a snippet around its best match, the matched words marked.
  const body = { query: $('query').value, limit: Number($('limit').value) || 10, highlight: true };
  if (!$('typos').checked) body.typoTolerance = false;
  if (filter) body.metadataFilter = filter;
  const minScore = optionalNumber('min-score');
  if (minScore !== undefined) body.minScore = minScore;
  const perContent = optionalNumber('per-content');
  if (perContent !== undefined) body.maxChunksPerContent = perContent;
  const before = optionalNumber('context-before') ?? 0;
  const after = optionalNumber('context-after') ?? 0;
  if (before > 0 || after > 0) body.context = { before, after };
  if (mode === 'hybrid') body.semanticWeight = Number($('weight').value);
  return body;
}

/** The filter of the form, or undefined with the reason shown beside it when it does not parse. */
function checkedFilter() {
  try {
    const filter = metadataFilter();
    setStatus($('filter-status'), '');
    return { filter };
  } catch (err) {
    setStatus($('filter-status'), err.message, true);
    return undefined;
  }
}

const lastHits = {};

/** The snippet as text nodes with the matched words in <mark> (highlights are offsets into the chunk). */
function markedSnippet(hit) {
  const { snippet, highlights = [] } = hit;
  const out = document.createDocumentFragment();
  if (!snippet) {
    out.append(hit.contentChunk);
    return out;
  }
  let at = snippet.start;
  if (snippet.start > 0) out.append('… ');
  for (const h of highlights) {
    if (h.start < at || h.end > snippet.end) continue;
    out.append(hit.contentChunk.slice(at, h.start), Object.assign(document.createElement('mark'), { textContent: hit.contentChunk.slice(h.start, h.end) }));
    at = h.end;
  }
  out.append(hit.contentChunk.slice(at, snippet.end));
  if (snippet.end < hit.contentChunk.length) out.append(' …');
  return out;
}

/** Metadata as key: value chips (the CLI's sha256 left out: it only tells files apart), the item id last. */
function metadataChips(hit) {
  const box = Object.assign(document.createElement('div'), { className: 'metadata' });
  for (const [key, value] of Object.entries(hit.metadata ?? {})) {
    if (key === 'sha256') continue;
    box.append(
      Object.assign(document.createElement('span'), { className: 'chip', textContent: `${key}: ${Array.isArray(value) ? value.join(', ') : String(value)}` }),
    );
  }
  box.append(Object.assign(document.createElement('span'), { className: 'item-id', textContent: hit.contentId }));
  return box;
}

/** The file an item came from, asked once per item (undefined for typed text). */
const fileNames = new Map();
function fileNameOf(contentId) {
  const key = `${$('kb').value}/${contentId}`;
  if (!fileNames.has(key)) {
    fileNames.set(
      key,
      api('GET', `/knowledge-bases/${$('kb').value}/contents/${contentId}`).then(
        ({ data }) => data.source?.fileName,
        () => undefined,
      ),
    );
  }
  return fileNames.get(key);
}

/** The hit's neighbouring chunks (context before and after), in the item's order around it. */
function contextOf(hit) {
  const { before = [], after = [] } = hit.context ?? {};
  if (before.length === 0 && after.length === 0) return undefined;
  const box = Object.assign(document.createElement('details'), { className: 'context' });
  box.append(Object.assign(document.createElement('summary'), { textContent: `context: ${before.length} before, ${after.length} after` }));
  for (const [side, chunks] of [
    ['before', before],
    ['after', after],
  ]) {
    for (const c of chunks) box.append(Object.assign(document.createElement('div'), { className: `neighbour ${side}`, textContent: c.contentChunk }));
    if (side === 'before') box.append(Object.assign(document.createElement('div'), { className: 'neighbour hit-itself', textContent: '▸ the hit' }));
  }
  return box;
}

function renderColumn(mode, hits, millis, error) {
  const column = document.querySelector(`.column[data-mode="${mode}"]`);
  const list = column.querySelector('ol');
  const meta = column.querySelector('.meta');
  list.replaceChildren();
  if (error) return setStatus(meta, error, true);
  setStatus(meta, `${hits.length} hits in ${Math.round(millis)} ms${mode === 'hybrid' ? `, semantic weight ${Number($('weight').value).toFixed(2)}` : ''}`);
  for (const hit of hits) {
    const li = document.createElement('li');
    li.className = 'hit';
    li.dataset.chunkId = hit.id;
    const score = Object.assign(document.createElement('span'), { className: 'score', textContent: hit.score.toFixed(4) });
    li.append(score);
    if (mode === 'hybrid') {
      // Which leg brought this hit: its rank in that leg's own results, with the leg's score.
      for (const leg of ['full-text', 'semantic']) {
        const rank = (lastHits[leg] ?? []).findIndex((h) => h.id === hit.id);
        const legScore = leg === 'full-text' ? hit.fullTextScore : hit.semanticScore;
        if (rank < 0 && !(legScore > 0)) continue;
        const badge = Object.assign(document.createElement('span'), { className: `leg ${leg}` });
        badge.textContent = `${leg} ${rank >= 0 ? `#${rank + 1}` : ''} ${legScore !== undefined ? legScore.toFixed(3) : ''}`.replace(/\s+/g, ' ').trim();
        li.append(badge);
      }
    }
    // Titled by the file the item came from; the snippet, and the whole chunk on demand.
    const title = Object.assign(document.createElement('div'), { className: 'title' });
    fileNameOf(hit.contentId).then((name) => {
      if (name) title.textContent = name;
    });
    const text = Object.assign(document.createElement('div'), { className: 'text' });
    text.append(markedSnippet(hit));
    const whole = document.createElement('details');
    whole.append(
      Object.assign(document.createElement('summary'), { textContent: 'whole chunk' }),
      Object.assign(document.createElement('div'), { className: 'chunk', textContent: hit.contentChunk }),
    );
    const metadata = metadataChips(hit);
    li.append(title, text, whole);
    const neighbours = contextOf(hit);
    if (neighbours) li.append(neighbours);
    li.append(metadata);
    list.append(li);
  }
}

async function runSearch(mode, filter) {
  const started = performance.now();
  try {
    const { data } = await api('POST', `/knowledge-bases/${$('kb').value}/search/${mode}`, searchBody(mode, filter));
    lastHits[mode] = data;
    return { mode, hits: data, millis: performance.now() - started };
  } catch (err) {
    lastHits[mode] = [];
    return { mode, error: err.message };
  }
}

async function searchAll(event) {
  event?.preventDefault();
  if (!$('query').value.trim() || !$('kb').value) return;
  const checked = checkedFilter();
  if (!checked) return;
  // Hybrid renders last, so its leg badges can point at the other two columns.
  const results = await Promise.all(MODES.map((mode) => runSearch(mode, checked.filter)));
  for (const r of results) renderColumn(r.mode, r.hits ?? [], r.millis, r.error);
  document.body.dataset.searched = String(Number(document.body.dataset.searched ?? 0) + 1);
}

let weightTimer;
async function weightChanged() {
  $('weight-value').textContent = Number($('weight').value).toFixed(2);
  clearTimeout(weightTimer);
  weightTimer = setTimeout(async () => {
    if (!$('query').value.trim() || !$('kb').value) return;
    const checked = checkedFilter();
    if (!checked) return;
    const r = await runSearch('hybrid', checked.filter);
    renderColumn('hybrid', r.hits ?? [], r.millis, r.error);
  }, 150);
}

// --- wiring -------------------------------------------------------------------------------------

$('org').value = session.org;
$('key').value = session.key;
$('connect').onclick = connect;
$('refresh-kbs').onclick = () => loadKnowledgeBases().catch((err) => setStatus($('connection-status'), err.message, true));
$('create-kb').onclick = createKnowledgeBase;
$('kb').onchange = selectKnowledgeBase;
$('upload').onclick = uploadSelected;
$('search-form').onsubmit = searchAll;
$('weight').oninput = weightChanged;
$('add-filter').onclick = () => addFilterRow();
if (session.org && session.key) connect();
