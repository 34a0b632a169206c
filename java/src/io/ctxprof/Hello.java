package io.ctxprof;
final class Hello {}
