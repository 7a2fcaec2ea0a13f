// Options that several `palisade` commands share, worded once.
import { Option } from 'commander';

/** --endpoints; read by endpointsFrom (main.ts), which falls back to $PALISADE_ENDPOINTS and then the config. */
export const endpointsOption = (): Option =>
  new Option('--endpoints <urls>', 'comma-separated client URLs (default: ./cluster.config.json, or $PALISADE_ENDPOINTS)');
