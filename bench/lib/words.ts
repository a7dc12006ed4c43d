// Generated text for extraction and upload benchmarks: a deterministic word stream (xorshift over
// a small vocabulary), so inputs repeat exactly and do not compress unrealistically well.

const VOCAB = (
  'account billing customer refund policy invoice payment order shipping delivery warehouse stock ' +
  'employee travel expense receipt approval manager contract renewal support ticket priority incident ' +
  'server network storage backup restore security password access review quarter revenue budget forecast ' +
  'the a of to and in for on with by from at as is are was be this that which will can may should'
).split(' ');

/** xorshift32; `state` is the last value drawn (a signed 32-bit integer, as JS bit operations give). */
export class Xorshift32 {
  constructor(public state = 0x2545f491) {}
  next(): number {
    let s = this.state;
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (this.state = s);
  }
  word(): string {
    return VOCAB[(this.next() >>> 0) % VOCAB.length]!;
  }
}
