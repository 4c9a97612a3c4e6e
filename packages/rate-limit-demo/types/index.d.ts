// Types for "rate-limit-demo": importing it defines <rate-limit-demo>; it also exports what
// "./element" and "./limiter" do.

export * from "./element.js";
