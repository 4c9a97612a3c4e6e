// The smallest Docusaurus site around the recipe's page (docs/rate-limits.mdx, written by the
// test from docs/embedding.md): the classic preset with no blog and no pages, the docs at the
// site's root.
export default {
  title: "Example API",
  url: "https://docs.example.com",
  baseUrl: "/",
  onBrokenLinks: "throw",
  presets: [["classic", { docs: { routeBasePath: "/" }, blog: false, pages: false }]],
};
