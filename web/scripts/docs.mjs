// The docs UI's build, run by `npm run build` after vite: copies the files
// of swagger-ui-dist it needs and ours (scripts/docs/) into dist/docs/,
// then writes a .gz beside each text file of dist/ worth compressing, which
// the server sends to clients that take gzip. Nothing is fetched at run
// time: the page loads these files from the server that serves it.
import { copyFileSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync, constants } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "..", "dist");
const out = join(dist, "docs");
const swagger = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));

mkdirSync(out, { recursive: true });
// Swagger UI: the bundle (a classic script defining SwaggerUIBundle), its
// stylesheet without the line naming a source map the build leaves out,
// its licence files, an icon.
for (const f of ["swagger-ui-bundle.js", "swagger-ui-bundle.js.LICENSE.txt", "LICENSE", "NOTICE", "favicon-32x32.png"]) {
  copyFileSync(join(swagger, f), join(out, f));
}
const css = readFileSync(join(swagger, "swagger-ui.css"), "utf8").replace(/\/\*# sourceMappingURL=.*?\*\/\s*$/, "");
writeFileSync(join(out, "swagger-ui.css"), css);
for (const f of ["index.html", "docs.js", "docs.css", "ratelimits.js"]) {
  copyFileSync(join(here, "docs", f), join(out, f));
}

// Precompress: a file.gz when it saves at least a tenth of a file of 1 KiB or more.
const compressible = new Set([".js", ".css", ".html", ".svg", ".json", ".txt"]);
let zipped = 0;
function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      walk(path);
      continue;
    }
    if (!compressible.has(extname(name)) || name.startsWith(".")) continue;
    const body = readFileSync(path);
    if (body.length < 1024) continue;
    const gz = gzipSync(body, { level: constants.Z_BEST_COMPRESSION });
    if (gz.length > body.length * 0.9) continue;
    writeFileSync(path + ".gz", gz);
    zipped++;
  }
}
walk(dist);
console.log(`docs: dist/docs written from swagger-ui-dist ${JSON.parse(readFileSync(join(swagger, "package.json"), "utf8")).version}; ${zipped} files of dist/ have a .gz beside them`);
