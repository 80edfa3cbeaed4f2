// A throwaway S3 emulator (moto_server, in the machine's Python) on 127.0.0.1, and an S3 client for it.
import { spawn } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import { S3Client } from '@aws-sdk/client-s3';
import { waitForServer } from './nginx.mjs';

export const REGION = 'us-east-1';
export const CREDENTIALS = { accessKeyId: 'testing', secretAccessKey: 'testing' };

/** Start moto_server; returns its endpoint, an S3 client for it, and a stop function. */
export async function startMoto() {
  // Port 0: moto binds a port of its own choosing and prints it. (A port picked here could be taken
  // by another test's server before moto binds it; requests then went to that server, whose HTML
  // page the S3 client failed to parse.)
  const proc = spawn('moto_server', ['-H', '127.0.0.1', '-p', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let said = '';
  let onData;
  const port = await new Promise((resolve, reject) => {
    onData = (c) => {
      said += c;
      const m = /Running on http:\/\/127\.0\.0\.1:(\d+)/.exec(said);
      if (m) resolve(Number(m[1]));
    };
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', onData);
    proc.once('exit', (code) => reject(new Error(`moto_server exited (${code}) before it listened: ${said.slice(-500)}`)));
  });
  // What moto prints from here on (a line per request) is not kept: it drains.
  proc.stderr.off('data', onData);
  proc.stderr.resume();
  const endpoint = `http://127.0.0.1:${port}`;
  await waitForServer(`${endpoint}/`);
  const client = new S3Client({ endpoint, region: REGION, credentials: CREDENTIALS, forcePathStyle: true });
  return {
    endpoint,
    client,
    stop: () => {
      client.destroy();
      proc.kill('SIGTERM');
    },
  };
}

/** SHA-256 (and HMAC-SHA-256 with a secret) in the shape @smithy/signature-v4 takes. */
export class Sha256 {
  constructor(secret) {
    this.hash = secret ? createHmac('sha256', secret) : createHash('sha256');
  }
  update(data) {
    this.hash.update(data);
  }
  async digest() {
    return new Uint8Array(this.hash.digest());
  }
}
