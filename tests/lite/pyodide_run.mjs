// Runs Python in Node with the lite site's own Pyodide and wheels: no browser, no network.
//   node --experimental-wasm-jspi pyodide_run.mjs SITE [--only=NAME,...] FILE...
// A FILE.ipynb runs its code cells in order (top-level await allowed), each notebook in a
// namespace and working directory of its own; a FILE.py runs as one cell. Exits 1 at the
// first cell that raises, naming it. --only installs just the named wheels (agentnb needs
// none of the others), not every wheel of the site.
import { readFileSync, readdirSync } from "node:fs";
import { basename, join, resolve } from "node:path";

const [site, ...files] = process.argv.slice(2);
const only = files[0]?.startsWith("--only=") ? files.shift().slice(7).split(",") : null;
const pyodideDir = resolve(site, "static/pyodide") + "/";
const { loadPyodide } = await import(join(pyodideDir, "pyodide.mjs"));
const py = await loadPyodide({ indexURL: pyodideDir, packageBaseUrl: pyodideDir });
await py.loadPackage(["micropip"]);
py.FS.mkdirTree("/wheels");
const wheels = readdirSync(resolve(site, "pypi"))
  .filter((f) => f.endsWith(".whl"))
  .filter((f) => !only || only.includes(f.split("-")[0]));
for (const w of wheels) py.FS.writeFile("/wheels/" + w, readFileSync(resolve(site, "pypi", w)));
py.globals.set("wheels", py.toPy(wheels.map((w) => "emfs:/wheels/" + w)));
// deps=False: every dependency is one of the site's wheels, so nothing is looked up online.
await py.runPythonAsync("import micropip\nawait micropip.install(wheels, deps=False)");

for (const file of files) {
  const name = basename(file);
  const cells = file.endsWith(".ipynb")
    ? JSON.parse(readFileSync(file, "utf8"))
        .cells.filter((c) => c.cell_type === "code")
        .map((c) => (Array.isArray(c.source) ? c.source.join("") : c.source))
        // The lite notebooks' first cell is `%pip install ...` (piplite, in the browser):
        // here every wheel of the site is installed already.
        .filter((source) => !/^%pip install /m.test(source))
    : [readFileSync(file, "utf8")];
  py.FS.mkdirTree("/home/course/" + name);
  py.FS.chdir("/home/course/" + name);
  const namespace = py.globals.get("dict")();
  for (const [i, source] of cells.entries()) {
    try {
      await py.runPythonAsync(source, { globals: namespace });
    } catch (error) {
      console.error(`FAILED ${name} code cell ${i}:\n${error.message}`);
      process.exit(1);
    }
  }
  console.log(`ran ${name}: ${cells.length} code cells`);
}
