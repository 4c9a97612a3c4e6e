// The manifest analyzer's settings for `node www/build.mjs`: read the element's JSDoc, and
// leave www/package.json alone (by default the analyzer writes a pointer to its output there).
export default {
  globs: ["src/element.js"],
  outdir: "../target/cem",
  packagejson: false,
};
