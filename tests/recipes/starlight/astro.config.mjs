// The smallest Starlight site around the recipe's page (src/content/docs/rate-limits.mdx and
// the component it imports, written by the test from docs/embedding.md): Starlight with its
// defaults (its sidebar lists every page, its favicon is public/favicon.svg), and the site's
// address, without which Astro's sitemap integration warns.
import starlight from "@astrojs/starlight";
import { defineConfig } from "astro/config";

export default defineConfig({
  site: "https://docs.example.com",
  integrations: [starlight({ title: "Example API" })],
});
