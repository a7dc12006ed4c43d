const png = await Bun.file('/tmp/exp/t.png').arrayBuffer();
const w = new Worker(new URL('./w.ts', import.meta.url));
w.onmessage = (e) => { console.log(e.data); w.terminate(); setTimeout(()=>{ console.log('threads after terminate'); process.exit(0)}, 500); };
w.postMessage(png, [png]);
