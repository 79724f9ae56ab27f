// A gRPC failure the simulated Pub/Sub server is told to inject (per stream, subscribe or schema call),
// and the error grpc-js sends for it: status, details and, when set, Salesforce's `error-code` trailer.
import { Metadata, type status } from "@grpc/grpc-js";

export interface GrpcFault {
  code: status;
  details: string;
  /** `error-code` trailer; omitted means no trailer at all. */
  errorCode?: string;
}

export function grpcError(fault: GrpcFault): Error & { code: status; details: string; metadata: Metadata } {
  const metadata = new Metadata();
  if (fault.errorCode !== undefined) metadata.set("error-code", fault.errorCode);
  return Object.assign(new Error(fault.details), { code: fault.code, details: fault.details, metadata });
}
