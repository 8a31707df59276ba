package dev.dlock.aspect;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.asm.ClassReader;
import org.springframework.asm.ClassVisitor;
import org.springframework.asm.ConstantDynamic;
import org.springframework.asm.Handle;
import org.springframework.asm.Label;
import org.springframework.asm.MethodVisitor;
import org.springframework.asm.SpringAsmInfo;
import org.springframework.asm.Type;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import static org.springframework.asm.Opcodes.*;

/**
 * Finds where a class calls its own locked methods through {@code this}, by reading its bytecode (and its
 * superclasses') once at startup. Each method's operand stack is followed word by word, marking the
 * words that hold {@code this}, so that {@code this.ship(id)} is told apart from {@code self.ship(id)} on an
 * injected proxy or {@code other.ship(id)}. Where the stack cannot be followed (an opcode it does not know),
 * it stops until the next stack map frame: a call it cannot attribute is left out, never guessed.
 * Not seen: calls from nested or anonymous classes ({@code Outer.this.ship(id)}), and classes whose
 * bytecode cannot be read.
 */
final class SelfInvocationFinder {

    private static final Logger log = LoggerFactory.getLogger(SelfInvocationFinder.class);

    private SelfInvocationFinder() {
    }

    /**
     * For each of {@code locked} (instance methods of {@code userClass}, overrides before what they override)
     * called through {@code this}, the callers.
     */
    static Map<Method, Set<String>> find(Class<?> userClass, List<Method> locked) {
        Map<String, Method> bySignature = new HashMap<>();
        for (Method method : locked) {
            // An override comes before the method it overrides: name the one a call on this class reaches.
            bySignature.putIfAbsent(method.getName() + Type.getMethodDescriptor(method), method);
        }
        Set<String> hierarchy = new HashSet<>();
        for (Class<?> type = userClass; type != null && type != Object.class; type = type.getSuperclass()) {
            hierarchy.add(Type.getInternalName(type));
        }
        Map<Method, Set<String>> found = new LinkedHashMap<>();
        for (Class<?> type = userClass; type != null && type != Object.class; type = type.getSuperclass()) {
            ClassReader reader = reader(type);
            if (reader != null) {
                reader.accept(new ClassScan(type, hierarchy, bySignature, found), ClassReader.EXPAND_FRAMES | ClassReader.SKIP_DEBUG);
            }
        }
        return found;
    }

    private static ClassReader reader(Class<?> type) {
        ClassLoader loader = type.getClassLoader();
        if (loader == null) {
            return null;
        }
        try (InputStream bytes = loader.getResourceAsStream(Type.getInternalName(type) + ".class")) {
            return bytes == null ? null : new ClassReader(bytes);
        } catch (IOException | RuntimeException e) {
            log.debug("dlock: cannot read the bytecode of {} to look for self-invocations", type.getName(), e);
            return null;
        }
    }

    /** {@code OrderService.shipAll(List)}; a lambda's body is named after the method it is written in. */
    private static String describe(Class<?> type, String name, String descriptor) {
        if (name.startsWith("lambda$") && name.indexOf('$', 7) > 7) {
            return type.getSimpleName() + "." + name.substring(7, name.indexOf('$', 7)) + " (in a lambda)";
        }
        String parameters = Arrays.stream(Type.getArgumentTypes(descriptor))
                .map(parameter -> parameter.getClassName().substring(parameter.getClassName().lastIndexOf('.') + 1))
                .collect(Collectors.joining(", "));
        return (name.equals("<init>") ? "new " + type.getSimpleName() : type.getSimpleName() + "." + name)
                + "(" + parameters + ")";
    }

    private static final class ClassScan extends ClassVisitor {
        private final Class<?> type;
        private final Set<String> hierarchy;
        private final Map<String, Method> locked;
        private final Map<Method, Set<String>> found;
        private boolean framed;

        ClassScan(Class<?> type, Set<String> hierarchy, Map<String, Method> locked, Map<Method, Set<String>> found) {
            super(SpringAsmInfo.ASM_VERSION);
            this.type = type;
            this.hierarchy = hierarchy;
            this.locked = locked;
            this.found = found;
        }

        @Override
        public void visit(int version, int access, String name, String signature, String superName, String[] interfaces) {
            // Before Java 6 class files carry no stack map frames, the points where the stack is known again.
            framed = (version & 0xFFFF) >= V1_6;
        }

        @Override
        public MethodVisitor visitMethod(int access, String name, String descriptor, String signature, String[] exceptions) {
            // A static method has no 'this'; a bridge method is intercepted by the proxy like the method it bridges to.
            if (!framed || (access & (ACC_STATIC | ACC_BRIDGE | ACC_ABSTRACT | ACC_NATIVE)) != 0) {
                return null;
            }
            return new ThisTracker(describe(type, name, descriptor), name + descriptor, hierarchy, locked, found);
        }
    }

    /** Follows one method's operand stack, one bit per word: set where the word holds {@code this}. */
    private static final class ThisTracker extends MethodVisitor {
        private final String caller;
        private final String callerSignature;
        private final Set<String> hierarchy;
        private final Map<String, Method> locked;
        private final Map<Method, Set<String>> found;
        private final BitSet isThis = new BitSet();
        private int depth;
        private boolean lost;

        ThisTracker(String caller, String callerSignature, Set<String> hierarchy, Map<String, Method> locked,
                    Map<Method, Set<String>> found) {
            super(SpringAsmInfo.ASM_VERSION);
            this.caller = caller;
            this.callerSignature = callerSignature;
            this.hierarchy = hierarchy;
            this.locked = locked;
            this.found = found;
        }

        @Override
        public void visitFrame(int type, int numLocal, Object[] local, int numStack, Object[] stack) {
            // At a branch target the stack is what the frame says; which of its words is 'this' is not known.
            depth = 0;
            for (int i = 0; i < numStack; i++) {
                depth += stack[i] == LONG || stack[i] == DOUBLE ? 2 : 1;
            }
            isThis.clear();
            lost = false;
        }

        @Override
        public void visitInsn(int opcode) {
            switch (opcode) {
                case DUP -> shuffle(1, 0, 0);
                case DUP_X1 -> shuffle(2, 1, 0, 1);
                case DUP_X2 -> shuffle(3, 2, 0, 1, 2);
                case DUP2 -> shuffle(2, 0, 1, 0, 1);
                case DUP2_X1 -> shuffle(3, 1, 2, 0, 1, 2);
                case DUP2_X2 -> shuffle(4, 2, 3, 0, 1, 2, 3);
                case SWAP -> shuffle(2, 1, 0);
                default -> {
                    int[] popsAndPushes = effect(opcode);
                    if (popsAndPushes == null) {
                        lost = true;
                    } else {
                        pop(popsAndPushes[0]);
                        pushOther(popsAndPushes[1]);
                    }
                }
            }
        }

        @Override
        public void visitIntInsn(int opcode, int operand) {
            if (opcode == NEWARRAY) {
                pop(1);
            }
            pushOther(1);
        }

        @Override
        public void visitVarInsn(int opcode, int slot) {
            switch (opcode) {
                case ALOAD -> push(slot == 0);
                case ILOAD, FLOAD -> pushOther(1);
                case LLOAD, DLOAD -> pushOther(2);
                case ISTORE, FSTORE, ASTORE -> pop(1);
                case LSTORE, DSTORE -> pop(2);
                default -> {
                }
            }
        }

        @Override
        public void visitTypeInsn(int opcode, String type) {
            switch (opcode) {
                case NEW -> pushOther(1);
                case ANEWARRAY, INSTANCEOF -> {
                    pop(1);
                    pushOther(1);
                }
                default -> {
                    // CHECKCAST: the same reference, still 'this' if it was
                }
            }
        }

        @Override
        public void visitFieldInsn(int opcode, String owner, String name, String descriptor) {
            int size = Type.getType(descriptor).getSize();
            switch (opcode) {
                case GETSTATIC -> pushOther(size);
                case PUTSTATIC -> pop(size);
                case GETFIELD -> {
                    pop(1);
                    pushOther(size);
                }
                default -> pop(1 + size);
            }
        }

        @Override
        public void visitMethodInsn(int opcode, String owner, String name, String descriptor, boolean isInterface) {
            int arguments = argumentWords(descriptor);
            // super.ship(id) inside an overriding ship(id): the override's own call is what the proxy locks.
            boolean superOfItself = opcode == INVOKESPECIAL && callerSignature.equals(name + descriptor);
            if (opcode != INVOKESTATIC && !superOfItself && !lost && depth > arguments && isThis.get(depth - arguments - 1)
                    && hierarchy.contains(owner)) {
                record(name + descriptor, caller);
            }
            pop(arguments + (opcode == INVOKESTATIC ? 0 : 1));
            pushOther(Type.getReturnType(descriptor).getSize());
        }

        @Override
        public void visitInvokeDynamicInsn(String name, String descriptor, Handle bootstrap, Object... arguments) {
            int captured = argumentWords(descriptor);
            // this::ship: the function object calls ship on the 'this' it captured, not on the proxy.
            if (captured > 0 && !lost && depth >= captured && isThis.get(depth - captured)
                    && arguments.length > 1 && arguments[1] instanceof Handle target
                    && target.getTag() != H_INVOKESTATIC && hierarchy.contains(target.getOwner())) {
                record(target.getName() + target.getDesc(), caller + " (as a method reference)");
            }
            pop(captured);
            pushOther(Type.getReturnType(descriptor).getSize());
        }

        @Override
        public void visitJumpInsn(int opcode, Label label) {
            switch (opcode) {
                case IFEQ, IFNE, IFLT, IFGE, IFGT, IFLE, IFNULL, IFNONNULL -> pop(1);
                case IF_ICMPEQ, IF_ICMPNE, IF_ICMPLT, IF_ICMPGE, IF_ICMPGT, IF_ICMPLE, IF_ACMPEQ, IF_ACMPNE -> pop(2);
                case JSR -> pushOther(1);
                default -> {
                }
            }
        }

        @Override
        public void visitLdcInsn(Object value) {
            boolean wide = value instanceof Long || value instanceof Double
                    || value instanceof ConstantDynamic constant && constant.getSize() == 2;
            pushOther(wide ? 2 : 1);
        }

        @Override
        public void visitTableSwitchInsn(int min, int max, Label fallback, Label... labels) {
            pop(1);
        }

        @Override
        public void visitLookupSwitchInsn(Label fallback, int[] keys, Label[] labels) {
            pop(1);
        }

        @Override
        public void visitMultiANewArrayInsn(String descriptor, int dimensions) {
            pop(dimensions);
            pushOther(1);
        }

        private void record(String signature, String by) {
            Method target = locked.get(signature);
            if (target != null) {
                found.computeIfAbsent(target, method -> new LinkedHashSet<>()).add(by);
            }
        }

        private void push(boolean holdsThis) {
            isThis.set(depth, holdsThis);
            depth++;
        }

        private void pushOther(int words) {
            for (int i = 0; i < words; i++) {
                push(false);
            }
        }

        private void pop(int words) {
            if (words > depth) {
                lost = true;
                depth = 0;
                return;
            }
            depth -= words;
        }

        /** Takes the top {@code taken} words (index 0 the deepest) and pushes them back in {@code order}. */
        private void shuffle(int taken, int... order) {
            if (taken > depth) {
                lost = true;
                return;
            }
            boolean[] words = new boolean[taken];
            for (int i = 0; i < taken; i++) {
                words[i] = isThis.get(depth - taken + i);
            }
            depth -= taken;
            for (int index : order) {
                push(words[index]);
            }
        }

        private static int argumentWords(String descriptor) {
            int words = 0;
            for (Type argument : Type.getArgumentTypes(descriptor)) {
                words += argument.getSize();
            }
            return words;
        }

        /** {pops, pushes} in stack words of an opcode without operands (DUP and SWAP aside); null when unknown. */
        private static int[] effect(int opcode) {
            return switch (opcode) {
                case NOP, RETURN -> new int[] {0, 0};
                case ACONST_NULL, ICONST_M1, ICONST_0, ICONST_1, ICONST_2, ICONST_3, ICONST_4, ICONST_5,
                        FCONST_0, FCONST_1, FCONST_2 -> new int[] {0, 1};
                case LCONST_0, LCONST_1, DCONST_0, DCONST_1 -> new int[] {0, 2};
                case IALOAD, FALOAD, AALOAD, BALOAD, CALOAD, SALOAD -> new int[] {2, 1};
                case LALOAD, DALOAD -> new int[] {2, 2};
                case IASTORE, FASTORE, AASTORE, BASTORE, CASTORE, SASTORE -> new int[] {3, 0};
                case LASTORE, DASTORE -> new int[] {4, 0};
                case POP, IRETURN, FRETURN, ARETURN, ATHROW, MONITORENTER, MONITOREXIT -> new int[] {1, 0};
                case POP2, LRETURN, DRETURN -> new int[] {2, 0};
                case IADD, ISUB, IMUL, IDIV, IREM, ISHL, ISHR, IUSHR, IAND, IOR, IXOR,
                        FADD, FSUB, FMUL, FDIV, FREM, FCMPL, FCMPG -> new int[] {2, 1};
                case LADD, LSUB, LMUL, LDIV, LREM, LAND, LOR, LXOR, DADD, DSUB, DMUL, DDIV, DREM -> new int[] {4, 2};
                case LSHL, LSHR, LUSHR -> new int[] {3, 2};
                case LCMP, DCMPL, DCMPG -> new int[] {4, 1};
                case INEG, FNEG, I2F, F2I, I2B, I2C, I2S, ARRAYLENGTH -> new int[] {1, 1};
                case LNEG, DNEG, L2D, D2L -> new int[] {2, 2};
                case I2L, I2D, F2L, F2D -> new int[] {1, 2};
                case L2I, L2F, D2I, D2F -> new int[] {2, 1};
                default -> null;
            };
        }
    }
}
