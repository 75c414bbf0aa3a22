// Reads a Zarr v3 array with zarrita: node zarr_read_v3.mjs ARRAY_DIR OUT.bin writes its values
// (little-endian, C order) to OUT.bin and prints the shape as JSON.
import * as zarr from "zarrita";
import FileSystemStore from "@zarrita/storage/fs";
import fs from "node:fs";

const [dir, out] = process.argv.slice(2);
const arr = await zarr.open(new FileSystemStore(dir), { kind: "array" });
const got = await zarr.get(arr);
fs.writeFileSync(out, Buffer.from(got.data.buffer, got.data.byteOffset, got.data.byteLength));
console.log(JSON.stringify(got.shape));
