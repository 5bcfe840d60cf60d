export * from './bytes.ts';
export * from './channel.ts';
export * from './crc.ts';
export * from './errors.ts';
export * from './frame.ts';
export * from './link.ts';
export * from './messages.ts';
export * from './parser.ts';
