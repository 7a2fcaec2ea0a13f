// The HTTP/JSON API, served on the client port next to websocket upgrades.
export { HttpApi, type HttpApiOptions } from './server.js';
export { apiNodeOf, type ApiNode } from './api-node.js';
export { ROUTES, servedRoutes, API_PREFIX, OPENAPI_PATH } from './routes.js';
