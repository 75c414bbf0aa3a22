// Writes Zarr v3 stores with zarrita (an implementation independent of this project's):
//   node zarr_write_v3.mjs DIR
// DIR/NAME.zarr for each store below, and DIR/NAME.bin with its values (little-endian,
// C order) for the test to compare the server's shots with.
import * as zarr from "zarrita";
import FileSystemStore from "@zarrita/storage/fs";
import fs from "node:fs";
import path from "node:path";

const dir = process.argv[2];
const stores = [
  // A group with the samples array "data": float32, blosc, chunks across shots and time.
  { name: "zarrita_blosc", group: true, shape: [4, 6, 40], chunk: [2, 4, 16], dtype: "float32",
    codecs: [{ name: "bytes", configuration: { endian: "little" } },
             { name: "blosc", configuration: { cname: "lz4", clevel: 5, shuffle: "shuffle",
                                               typesize: 4, blocksize: 0 } }],
    value: (i) => i * 0.375 - 11 },
  // The store is the array: int16, big-endian, zstd.
  { name: "zarrita_zstd_i2", group: false, shape: [3, 5, 33], chunk: [1, 5, 11], dtype: "int16",
    codecs: [{ name: "bytes", configuration: { endian: "big" } },
             { name: "zstd", configuration: { level: 3, checksum: false } }],
    value: (i) => ((i * 37) % 2001) - 1000 },
];
for (const s of stores) {
  const root = path.join(dir, `${s.name}.zarr`);
  fs.mkdirSync(root, { recursive: true });
  const store = new FileSystemStore(root);
  let loc = zarr.root(store);
  if (s.group) {
    await zarr.create(loc, { attributes: { sample_interval_us: 1000 } });
    loc = loc.resolve("data");
  }
  const arr = await zarr.create(loc, {
    shape: s.shape, chunkShape: s.chunk, dtype: s.dtype, codecs: s.codecs, fillValue: 0,
    dimensionNames: ["shot", "trace", "time"],
  });
  const n = s.shape.reduce((a, b) => a * b, 1);
  const data = s.dtype === "float32" ? new Float32Array(n) : new Int16Array(n);
  for (let i = 0; i < n; i++) data[i] = s.value(i);
  const stride = [s.shape[1] * s.shape[2], s.shape[2], 1];
  await zarr.set(arr, null, { data, shape: s.shape, stride });
  fs.writeFileSync(path.join(dir, `${s.name}.bin`), Buffer.from(data.buffer));
}
console.log("written");
