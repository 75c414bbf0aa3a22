// A shotstream client written from proto/shotstream/v1/shotstream.proto alone (its
// comments say every byte layout), with @grpc/grpc-js and @grpc/proto-loader: what a
// stranger's client in another language does. //tests:node_client_test runs it:
//   node client.mjs PROTO TARGET DATASET OUT_DIR
// It lists and gets the dataset, streams its shots as FLOAT32, NATIVE and INT16 in small
// chunks (reassembled, CRC-32 checked as the proto says, decoded to float32), writes a
// dataset (WriteShots: start, shot parts, finish), asks the standard health service and
// server reflection, and prints one JSON object; OUT_DIR/ENCODING_ID.bin holds each shot
// as float32 little-endian, OUT_DIR/written.bin what it wrote.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import grpc from "@grpc/grpc-js";
import protoLoader from "@grpc/proto-loader";

const [protoPath, target, dataset, out] = process.argv.slice(2);
const options = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true };

// The standard health and reflection services, as grpc.io publishes them (the parts used).
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "shotstream-node-"));
fs.writeFileSync(path.join(tmp, "health.proto"), `syntax = "proto3";
package grpc.health.v1;
message HealthCheckRequest { string service = 1; }
message HealthCheckResponse {
  enum ServingStatus { UNKNOWN = 0; SERVING = 1; NOT_SERVING = 2; SERVICE_UNKNOWN = 3; }
  ServingStatus status = 1;
}
service Health { rpc Check(HealthCheckRequest) returns (HealthCheckResponse); }
`);
fs.writeFileSync(path.join(tmp, "reflection.proto"), `syntax = "proto3";
package grpc.reflection.v1alpha;
message ServerReflectionRequest {
  string host = 1;
  oneof message_request { string file_by_filename = 3; string list_services = 7; }
}
message ServiceResponse { string name = 1; }
message ListServiceResponse { repeated ServiceResponse service = 1; }
message ErrorResponse { int32 error_code = 1; string error_message = 2; }
message ServerReflectionResponse {
  string valid_host = 1;
  ServerReflectionRequest original_request = 2;
  oneof message_response {
    ListServiceResponse list_services_response = 6;
    ErrorResponse error_response = 7;
  }
}
service ServerReflection {
  rpc ServerReflectionInfo(stream ServerReflectionRequest) returns (stream ServerReflectionResponse);
}
`);
const load = (p) => grpc.loadPackageDefinition(protoLoader.loadSync(p, options));
const v1 = load(protoPath).shotstream.v1;
const health = load(path.join(tmp, "health.proto")).grpc.health.v1;
const reflection = load(path.join(tmp, "reflection.proto")).grpc.reflection.v1alpha;
const creds = grpc.credentials.createInsecure();
const channelOptions = { "grpc.max_receive_message_length": -1 };
const client = new v1.ShotStream(target, creds, channelOptions);

// CRC-32 as the proto says: zlib's (reflected 0xEDB88320), from 0 for each shot.
const table = new Uint32Array(256);
for (let i = 0; i < 256; i++) {
  let c = i;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  table[i] = c >>> 0;
}
function crc32(crc, bytes) {
  crc = ~crc >>> 0;
  for (const b of bytes) crc = table[(crc ^ b) & 0xff] ^ (crc >>> 8);
  return ~crc >>> 0;
}

const unary = (method, request) =>
  new Promise((resolve, reject) => client[method](request, (err, res) => (err ? reject(err) : resolve(res))));

// IBM System/360 float, as the proto's ENCODING_NATIVE says: sign, 7-bit base-16 exponent
// biased by 64, 24-bit fraction.
function ibmToFloat(word) {
  const sign = word >>> 31 ? -1 : 1;
  const exponent = (word >>> 24) & 0x7f;
  const fraction = word & 0xffffff;
  return Math.fround(sign * (fraction / 0x1000000) * Math.pow(16, exponent - 64));
}

// One NATIVE chunk's samples to float32, by ShotChunk.sample_format and big_endian.
function decodeNative(bytes, format, bigEndian, n) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const le = !bigEndian;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    switch (format) {
      case 1: out[i] = ibmToFloat(view.getUint32(4 * i, le)); break;
      case 2: out[i] = view.getInt32(4 * i, le); break;
      case 3: out[i] = view.getInt16(2 * i, le); break;
      case 8: out[i] = view.getInt8(i); break;
      case 10: out[i] = view.getUint32(4 * i, le); break;
      case 11: out[i] = view.getUint16(2 * i, le); break;
      case 16: out[i] = view.getUint8(i); break;
      default: throw new Error(`NATIVE sample format ${format} is not decoded here`);
    }
  }
  return out;
}

// One INT16 chunk: chunk_traces float32 scales, then the int16 samples, little-endian.
function decodeInt16(bytes, traces, ns) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(traces * ns);
  for (let t = 0; t < traces; t++) {
    const scale = view.getFloat32(4 * t, true);
    for (let s = 0; s < ns; s++) {
      out[t * ns + s] = Math.fround(view.getInt16(4 * traces + 2 * (t * ns + s), true) * scale);
    }
  }
  return out;
}

// Streams `ids` with `encoding`; resolves to {shot id: {samples, chunks, headers}}.
function stream(ids, encoding, maxChunkBytes) {
  return new Promise((resolve, reject) => {
    const shots = {};
    let cur = null;
    let crc = 0;
    const call = client.StreamShots({
      dataset, shot_ids: ids, queue_depth: 2,
      selection: { encoding, headers: ["offset"], max_chunk_bytes: maxChunkBytes },
    });
    call.on("data", (c) => {
      if (cur === null || cur.shot_id !== c.shot_id || c.offset === 0) {
        cur = { shot_id: c.shot_id, samples: new Float32Array(c.total_bytes / 4), chunks: 0,
                headers: Object.fromEntries(c.headers.map((h) => [h.name, h.values])) };
        crc = 0;
      }
      const bytes = new Uint8Array(c.samples);
      const first = c.offset / 4;
      let values;
      if (c.encoding === "ENCODING_FLOAT32") {
        values = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
        crc = crc32(crc, bytes);
      } else if (c.encoding === "ENCODING_NATIVE") {
        values = decodeNative(bytes, c.sample_format, c.big_endian, c.chunk_traces * c.n_samples);
        crc = crc32(crc, new Uint8Array(values.buffer));
      } else if (c.encoding === "ENCODING_INT16") {
        crc = crc32(crc, bytes);  // lossy: over the bytes as sent, checked before decoding
        values = decodeInt16(bytes, c.chunk_traces, c.n_samples);
      } else {
        reject(new Error(`encoding ${c.encoding} not asked for`));
        return;
      }
      cur.samples.set(values, first);
      cur.chunks += 1;
      if (c.last) {
        if (crc !== c.crc32) {
          reject(new Error(`shot ${c.shot_id}: CRC-32 ${crc} where the server sent ${c.crc32}`));
          call.cancel();
          return;
        }
        shots[c.shot_id] = cur;
        cur = null;
      }
    });
    call.on("error", reject);
    call.on("end", () => resolve(shots));
  });
}

function write(name, shots, intervalUs) {
  return new Promise((resolve, reject) => {
    const call = client.WriteShots((err, res) => (err ? reject(err) : resolve(res)));
    call.write({ start: { dataset: name, sample_interval_us: intervalUs, sample_format: 5 } });
    for (const s of shots) {
      const bytes = new Uint8Array(s.samples.buffer);
      const traceBytes = s.ns * 4;
      let crc = 0;
      for (let t = 0; t < s.traces; t++) {  // one trace a part: whole traces, in order
        const part = bytes.subarray(t * traceBytes, (t + 1) * traceBytes);
        crc = crc32(crc, part);
        const msg = { samples: Buffer.from(part) };
        if (t === 0) Object.assign(msg, { shot_id: s.id, n_traces: s.traces, n_samples: s.ns,
                                          headers: [{ name: "offset", values: s.offset }] });
        if (t === s.traces - 1) Object.assign(msg, { shot_end: true, crc32: crc });
        call.write({ shot: msg });
      }
    }
    call.write({ finish: {} });
    call.end();
  });
}

function check(service) {
  const h = new health.Health(target, creds);
  return new Promise((resolve) => h.Check({ service }, (err, res) =>
    resolve(err ? `error ${err.code}` : res.status)));
}

function listServices() {
  const r = new reflection.ServerReflection(target, creds);
  return new Promise((resolve, reject) => {
    const call = r.ServerReflectionInfo();
    call.on("data", (m) => {
      resolve(m.list_services_response.service.map((s) => s.name));
      call.end();
    });
    call.on("error", reject);
    call.write({ list_services: "*" });
  });
}

const result = {};
const listed = await unary("ListDatasets", {});
result.datasets = listed.datasets.map((d) => [d.name, d.state]);
const info = await unary("GetDataset", { name: dataset });
result.info = { n_shots: info.n_shots, n_samples: info.n_samples, sample_format: info.sample_format,
                shot_ids: info.shot_ids, header_fields: info.header_fields };
const traceBytes = info.n_samples * 4;
result.streams = {};
for (const encoding of ["ENCODING_FLOAT32", "ENCODING_NATIVE", "ENCODING_INT16"]) {
  // Chunks of 3 traces: every shot comes in several.
  const shots = await stream(info.shot_ids, encoding, 3 * traceBytes);
  result.streams[encoding] = {};
  for (const [id, s] of Object.entries(shots)) {
    fs.writeFileSync(path.join(out, `${encoding}_${id}.bin`), Buffer.from(s.samples.buffer));
    fs.writeFileSync(path.join(out, `offset_${id}.json`), JSON.stringify(s.headers.offset));
    result.streams[encoding][id] = s.chunks;
  }
}
// A dataset written from here: two shots, one trace a message.
const ns = 25;
const written = [7, 9].map((id) => {
  const traces = 4;
  const samples = new Float32Array(traces * ns);
  for (let i = 0; i < samples.length; i++) samples[i] = Math.fround(Math.sin(i * 0.1 + id) * 100);
  return { id, traces, ns, samples, offset: [100 * id, 100 * id + 25, 100 * id + 50, 100 * id + 75] };
});
fs.writeFileSync(path.join(out, "written.bin"),
                 Buffer.concat(written.map((s) => Buffer.from(s.samples.buffer))));
const w = await write("from_node", written, 1000);
result.written = { name: w.dataset.name, state: w.dataset.state, shot_ids: w.dataset.shot_ids,
                   max_error: w.max_error ?? w.write_max_error ?? null };
result.health = { overall: await check(""), dataset: await check(`shotstream.v1.ShotStream/${dataset}`),
                  unknown: await check("shotstream.v1.ShotStream/no_such") };
result.services = await listServices();
console.log(JSON.stringify(result));
process.exit(0);
