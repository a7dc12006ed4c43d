import winkNLP from 'wink-nlp';
import model from 'wink-eng-lite-web-model';
import stem from 'wink-porter2-stemmer';
import { readFileSync } from 'fs';
const lines = readFileSync('../shared/eval/scifact-train/corpus.jsonl','utf8').trim().split('\n').slice(0,2000).map(l=>JSON.parse(l));
const texts = lines.map((d:any)=>d.title+'\n\n'+d.text);
const chars = texts.reduce((a,t)=>a+t.length,0);
const nlp = winkNLP(model, []);
const its = nlp.its;
let t=performance.now(); let ntok=0;
for (const tx of texts) { const d = nlp.readDoc(tx); const toks = d.tokens().out(its.normal); ntok+=toks.length; }
let dt=performance.now()-t; console.log('wink readDoc no pipe', dt.toFixed(0),'ms', ntok, 'tokens', (ntok/dt*1000).toFixed(0),'tok/s', (chars/dt/1000).toFixed(2),'MB/s');
t=performance.now(); ntok=0;
for (const tx of texts) { const toks = tx.toLowerCase().match(/[\p{L}\p{N}]+/gu)||[]; ntok+=toks.length; }
dt=performance.now()-t; console.log('regex', dt.toFixed(0),'ms', ntok, (ntok/dt*1000).toFixed(0));
const cache = new Map(); t=performance.now(); let n=0;
for (const tx of texts) { for (const w of tx.toLowerCase().match(/[\p{L}\p{N}]+/gu)||[]) { let s=cache.get(w); if(s===undefined){s=stem(w);cache.set(w,s);} n++; } }
dt=performance.now()-t; console.log('stem cached', dt.toFixed(0),'ms', cache.size);
const tk = nlp.readDoc("The purpose of opaque x-ray - IL-6 well-being").tokens().out(); console.log(tk);
