// Files imported `with { type: 'file' }` resolve to a path (embedded in compiled binaries).
declare module 'swagger-ui-dist/swagger-ui-bundle.js' {
  const path: string;
  export default path;
}
declare module 'swagger-ui-dist/swagger-ui.css' {
  const path: string;
  export default path;
}
// The playground's static files (package.json "imports"), served as they are.
declare module '#playground/*' {
  const path: string;
  export default path;
}
