// The floor of `make bench-compare`: the fastest pass-through this machine runs.
//
//   node bench/floor.js UPSTREAM_URL   # prints "floor on http://127.0.0.1:PORT"
//
// Node's own `http` on both sides (llhttp parsers, kept-alive upstream sockets),
// one process, no auth, no routing, no state: each POST's path, body,
// Authorization and Content-Type go to the upstream, its status, Content-Type
// and body (streamed as it arrives) come back. Whatever a proxy does beyond
// this is what it adds.
"use strict";

const http = require("http");

const upstream = new URL(process.argv[2]);
const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 256 });

const server = http.createServer((req, res) => {
  const headers = { "content-type": req.headers["content-type"] || "application/json" };
  if (req.headers.authorization) headers.authorization = req.headers.authorization;
  if (req.headers["content-length"]) headers["content-length"] = req.headers["content-length"];
  const out = http.request(
    {
      host: upstream.hostname,
      port: upstream.port,
      method: "POST",
      path: req.url,
      headers,
      agent,
    },
    (answer) => {
      const kept = {};
      if (answer.headers["content-type"]) kept["content-type"] = answer.headers["content-type"];
      if (answer.headers["content-length"]) kept["content-length"] = answer.headers["content-length"];
      res.writeHead(answer.statusCode, kept);
      answer.pipe(res);
    },
  );
  out.on("error", () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(out);
});
server.keepAliveTimeout = 65000;
server.listen(0, "127.0.0.1", () => {
  console.log(`floor on http://127.0.0.1:${server.address().port}`);
});
