"""Events at uniform random positions against the event-train rules of
analyzer/src/analysis/periodicity/events.rs (a transcription of `regular` and `comb`):
how often each count of events passes, and the p-value reported for such a train.
It sets aside each event in turn where the code tries only the one or two beside the
spacings off the median, so the code passes at most as often.
Run: python3 docs/validation/analyzer/events-null.py (about 10 minutes)."""
import random, statistics, math
TOL=0.15; JIT=0.075
def tol(T): return max(TOL*T,1.0)
def comb(pos,n):
    m=len(pos)
    if m<2: return False
    d=[pos[i+1]-pos[i] for i in range(m-1)]
    T0=statistics.median(d)
    if T0<2.5 or T0>n/3: return False
    c=[round(x/T0) for x in d]
    if min(c)<1: return False
    if any(abs(x-k*T0)>tol(T0) for x,k in zip(d,c)): return False
    idx=[0]
    for k in c: idx.append(idx[-1]+k)
    mi=sum(idx)/m; mp=sum(pos)/m
    sxx=sum((i-mi)**2 for i in idx); T=sum((i-mi)*(p-mp) for i,p in zip(idx,pos))/sxx
    phi=mp-T*mi
    r=math.sqrt(sum((p-phi-T*i)**2 for i,p in zip(idx,pos))/m)
    if r>max(JIT*T,0.5): return False
    e=lambda g: max(0,math.floor((g-tol(T))/T))
    cycles=idx[-1]+1+e(pos[0])+e(n-1-pos[-1])
    return cycles>=6 and cycles-m<=max(1,cycles//4)
def regular(pos,n):
    if comb(pos,n): return True
    if len(pos)<=7: return False
    return any(comb(pos[:i]+pos[i+1:],n) for i in range(len(pos)))
random.seed(7)
for m in [6,7,8,9,10,12]:
    hits=0; N=100000
    for _ in range(N):
        n=random.randint(50,3000)
        hits+=regular(sorted(random.sample(range(n),m)),n)
    # Train::p_value: 4 searches x choices x spacings x (2 JIT)^(on the comb - 2)
    whole=4*(m-1)*(2*JIT)**(m-2)
    aside=4*m*(m-2)*(2*JIT)**(m-3)
    print(m, 'passed', hits/N, 'p of a train of all', whole, 'p with one set aside', aside)
